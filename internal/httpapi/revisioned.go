package httpapi

import (
	"encoding/json"
	"fmt"

	"github.com/svcdev/svc/gen/api"
)

// Helpers shared by the agent and skill handlers (the revisioned resources).

// configJSON re-encodes a decoded request configuration for the domain's own
// strict decoder; the generated request types and the domain's input have the
// same JSON shape, and the contract has already validated it.
func configJSON(v any) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode request config: %w", err)
	}
	return raw, nil
}

// viewJSON converts a domain value into the generated view type of the same
// JSON shape.
func viewJSON[T any](v any) (T, error) {
	var out T
	raw, err := json.Marshal(v)
	if err != nil {
		return out, fmt.Errorf("encode config view: %w", err)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, fmt.Errorf("decode config view: %w", err)
	}
	return out, nil
}

// labelsIn maps optional request labels; nil keeps (PATCH) or means none (create).
func labelsIn(l *api.Labels) map[string]string {
	if l == nil {
		return nil
	}
	if *l == nil {
		return map[string]string{}
	}
	return map[string]string(*l)
}

// descriptionIn maps an optional request description.
func descriptionIn(d *api.Description) *string {
	if d == nil {
		return nil
	}
	s := string(*d)
	return &s
}

// labelSelectors maps the repeated label query parameter.
func labelSelectors(l *api.LabelSelector) []string {
	if l == nil {
		return nil
	}
	return *l
}
