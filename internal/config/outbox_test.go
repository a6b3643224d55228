package config

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultOutboxMatchesSpec(t *testing.T) {
	t.Parallel()

	o := Default().Outbox
	require.Equal(t, 60, o.PurgeIntervalSeconds)
	require.Equal(t, 1000, o.PurgeBatch)
	require.Equal(t, 5, o.PurgeBudgetSeconds)
	require.Equal(t, OutboxPolicy{
		DeliveredRetentionSeconds: 86400,
		DeadRetentionSeconds:      1209600,
		MaxAttempts:               12,
		Batch:                     32,
		Parallel:                  8,
		LeaseSeconds:              60,
		BacklogCount:              10000,
		BacklogAgeSeconds:         300,
		BacklogAlertSeconds:       300,
	}, o.Defaults)
	require.Empty(t, o.ByKind)
}

func TestPolicy(t *testing.T) {
	t.Parallel()

	defaults := Default().Outbox.Defaults
	with := func(f func(p *OutboxPolicy)) OutboxPolicy {
		p := defaults
		f(&p)
		return p
	}

	tests := []struct {
		name   string
		byKind map[string]OutboxOverride
		kind   string
		want   OutboxPolicy
	}{
		{name: "KindWithoutOverrides", kind: "identity_mail", want: defaults},
		{name: "UnknownKindGetsDefaults", kind: "nope", want: defaults},
		{
			name: "BuiltinWebhook", kind: "webhook",
			want: with(func(p *OutboxPolicy) { p.DeliveredRetentionSeconds = 604800 }),
		},
		{
			name: "BuiltinCheckpointCleanup", kind: "checkpoint_cleanup",
			want: with(func(p *OutboxPolicy) { p.DeliveredRetentionSeconds = 3600; p.Parallel = 2 }),
		},
		{
			name:   "OperatorFieldKeepsBuiltin",
			byKind: map[string]OutboxOverride{"webhook": {MaxAttempts: intPtr(5)}},
			kind:   "webhook",
			want:   with(func(p *OutboxPolicy) { p.DeliveredRetentionSeconds = 604800; p.MaxAttempts = 5 }),
		},
		{
			name:   "OperatorReplacesBuiltinField",
			byKind: map[string]OutboxOverride{"checkpoint_cleanup": {Parallel: intPtr(6)}},
			kind:   "checkpoint_cleanup",
			want:   with(func(p *OutboxPolicy) { p.DeliveredRetentionSeconds = 3600; p.Parallel = 6 }),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			o := Default().Outbox
			o.ByKind = tt.byKind
			require.Equal(t, tt.want, o.Policy(tt.kind))
		})
	}
}

// apply pairs OutboxOverride and OutboxPolicy fields by position.
func TestOutboxOverrideMirrorsPolicy(t *testing.T) {
	t.Parallel()

	ov, p := reflect.TypeFor[OutboxOverride](), reflect.TypeFor[OutboxPolicy]()
	require.Equal(t, p.NumField(), ov.NumField())
	for i := range p.NumField() {
		require.Equal(t, p.Field(i).Name, ov.Field(i).Name)
		require.Equal(t, p.Field(i).Tag, ov.Field(i).Tag)
		require.Equal(t, reflect.PointerTo(p.Field(i).Type), ov.Field(i).Type)
	}
}

func TestBuiltinOverridesUseKnownKinds(t *testing.T) {
	t.Parallel()

	for kind := range builtinOverrides() {
		require.Contains(t, OutboxKinds, kind)
	}
}
