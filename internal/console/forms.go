package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/svcdev/svc/internal/apperr"
)

// msgStale is what a form says when its resource changed since the page was
// opened: the change was refused, nothing was overwritten.
const msgStale = "This changed since you opened it, so your change was not saved. Reload the page to see the current version, then make your change again."

// formError puts what a service refused into the form's view: the reasons
// beside their fields, or one message above the form. It answers the status
// to render the form again with, and false for a failure no form can explain
// (which the caller returns as it is).
func formError(v *view, err error) (int, bool) {
	ae, ok := apperr.As(err)
	if !ok {
		return 0, false
	}
	switch ae.Kind {
	case apperr.KindInvalidArgument, apperr.KindNotFound:
		if ae.Kind == apperr.KindNotFound && len(ae.Details) == 0 {
			return 0, false // the page's own resource is gone: a 404 page
		}
		if len(ae.Details) == 0 {
			v.Error = sentence(ae.Msg)
			return http.StatusUnprocessableEntity, true
		}
		if v.Fields == nil {
			v.Fields = map[string]string{}
		}
		for _, d := range ae.Details {
			if v.Fields[d.Field] == "" {
				v.Fields[d.Field] = d.Reason
			}
		}
		v.Error = "Check the fields marked below."
		status := http.StatusUnprocessableEntity
		if ae.Kind == apperr.KindNotFound {
			status = http.StatusNotFound
		}
		return status, true
	case apperr.KindAlreadyExists, apperr.KindConflict, apperr.KindDisabled:
		v.Error = sentence(ae.Msg)
		return http.StatusConflict, true
	case apperr.KindPreconditionFailed, apperr.KindPreconditionRequired:
		v.Error = msgStale
		return http.StatusPreconditionFailed, true
	case apperr.KindPermissionDenied:
		v.Error = sentence(ae.Msg)
		return http.StatusForbidden, true
	case apperr.KindPayloadTooLarge:
		v.Error = sentence(ae.Msg)
		return http.StatusRequestEntityTooLarge, true
	case apperr.KindRateLimited:
		v.Error = "Too many attempts. Wait " + plural(ae.RetryAfterSeconds(), "second") + " and try again."
		return http.StatusTooManyRequests, true
	}
	return 0, false
}

// formInt reads an optional whole number field; ok is false when it is
// there but not a number.
func formInt(s string) (n *int, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, true
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return nil, false
	}
	return &v, true
}
