package vendortest

import (
	"fmt"
	"net/http"
	"strings"
)

// fault is an answer queued for the next namespace delete.
type fault struct {
	status int    // 0: hang until the request ends
	body   string // the vendor's error body
}

// AddNamespace creates a namespace holding records, as writes to it would.
func (s *Server) AddNamespace(ns string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.namespaces[ns] = true
}

// HasNamespace reports whether the namespace exists.
func (s *Server) HasNamespace(ns string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.namespaces[ns]
}

// FailNext makes the next namespace delete that speaks the protocol and
// carries the right key answer status with body (a 429 or a 5xx, say)
// without deleting anything. Calls queue up, one answer per delete.
func (s *Server) FailNext(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fault{status: status, body: body})
}

// HangNext makes the next namespace delete that speaks the protocol and
// carries the right key get no answer until the caller gives up.
func (s *Server) HangNext() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fault{})
}

// Deletes counts the namespace deletes served (well formed or not).
func (s *Server) Deletes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.Method == http.MethodDelete {
			n++
		}
	}
	return n
}

// serveNamespaceDelete serves the vendor's namespace delete: the path with
// one namespace segment, no query and no body, the vendor's headers and key.
func (s *Server) serveNamespaceDelete(w http.ResponseWriter, r *http.Request) {
	v := s.Vendor
	before, after, _ := strings.Cut(v.BasePath+v.NamespaceDelete, "{namespace}")
	ns, ok := strings.CutPrefix(r.URL.Path, before)
	if ok {
		ns, ok = strings.CutSuffix(ns, after)
	}
	if !ok || ns == "" || strings.Contains(ns, "/") {
		s.problem(w, http.StatusNotFound, "request DELETE %s, want DELETE %s", r.URL.Path, v.BasePath+v.NamespaceDelete)
		return
	}
	if r.URL.RawQuery != "" {
		s.problem(w, http.StatusBadRequest, "namespace delete with query %q, want none", r.URL.RawQuery)
		return
	}
	if r.ContentLength != 0 {
		s.problem(w, http.StatusBadRequest, "namespace delete with a body of %d bytes, want none", r.ContentLength)
		return
	}
	for name, want := range v.Headers {
		if got := r.Header.Get(name); got != want {
			s.problem(w, http.StatusBadRequest, "header %s = %q, want %q", name, got, want)
			return
		}
	}
	if !s.authorized(w, r) {
		return
	}
	s.mu.Lock()
	var f *fault
	if len(s.faults) > 0 {
		f = &s.faults[0]
		s.faults = s.faults[1:]
	}
	existed := s.namespaces[ns]
	if f == nil {
		delete(s.namespaces, ns)
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case f != nil && f.status == 0:
		<-r.Context().Done()
	case f != nil:
		w.WriteHeader(f.status)
		_, _ = fmt.Fprint(w, f.body)
	case existed:
		_, _ = fmt.Fprint(w, v.Deleted)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprint(w, strings.ReplaceAll(v.NamespaceMissing, "{namespace}", ns))
	}
}
