package config

import "reflect"

// OutboxKinds lists every outbox kind; outbox.by_kind accepts only these.
var OutboxKinds = []string{"webhook", "identity_mail", "subagent_result", "memory_namespace_purge", "checkpoint_cleanup"}

// builtinOverrides are the per-kind overrides the spec ships with. They sit
// between outbox.defaults and the operator's outbox.by_kind, so an operator
// who sets one field of a kind keeps the built-in values of the others.
func builtinOverrides() map[string]OutboxOverride {
	return map[string]OutboxOverride{
		"webhook":            {DeliveredRetentionSeconds: intPtr(604800)},
		"checkpoint_cleanup": {DeliveredRetentionSeconds: intPtr(3600), Parallel: intPtr(2)},
	}
}

func intPtr(v int) *int { return &v }

// Policy returns the effective policy of an outbox kind: Defaults, then the
// built-in override of the kind, then ByKind[kind], each layer replacing only
// the fields it sets. A kind without overrides gets Defaults.
func (o *Outbox) Policy(kind string) OutboxPolicy {
	p := o.Defaults
	if b, ok := builtinOverrides()[kind]; ok {
		p = b.apply(p)
	}
	if u, ok := o.ByKind[kind]; ok {
		p = u.apply(p)
	}
	return p
}

// apply returns p with every field set in ov replaced. OutboxOverride mirrors
// OutboxPolicy field by field, so fields are matched by position.
func (ov OutboxOverride) apply(p OutboxPolicy) OutboxPolicy {
	src := reflect.ValueOf(ov)
	dst := reflect.ValueOf(&p).Elem()
	for i := range src.NumField() {
		if f := src.Field(i); !f.IsNil() {
			dst.Field(i).SetInt(f.Elem().Int())
		}
	}
	return p
}
