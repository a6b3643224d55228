package web

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func wantQuery(t *testing.T, r seen, want map[string]string) {
	t.Helper()
	if len(r.Query) != len(want) {
		t.Errorf("query %v, want exactly %v", r.Query, want)
	}
	for k, v := range want {
		if got := r.Query[k]; len(got) != 1 || got[0] != v {
			t.Errorf("query %s = %v, want %q", k, got, v)
		}
	}
}

func wantHeader(t *testing.T, r seen, name, want string) {
	t.Helper()
	if got := r.Header.Get(name); got != want {
		t.Errorf("header %s = %q, want %q", name, got, want)
	}
}

func wantBody(t *testing.T, r seen, want map[string]any) {
	t.Helper()
	if !reflect.DeepEqual(r.Body, want) {
		t.Errorf("body %v, want %v", r.Body, want)
	}
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	return e
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// noSecrets fails when s holds the key, a piece of it, or the vendor's words.
func noSecrets(t *testing.T, s string) {
	t.Helper()
	for _, bad := range []string{testKey, testKey[:12], "SECRETKEY", vendorBody, "127.0.0.1", "http://"} {
		if strings.Contains(s, bad) {
			t.Fatalf("%q holds %q", s, bad)
		}
	}
}
