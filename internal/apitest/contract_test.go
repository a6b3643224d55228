package apitest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/apitest"
)

// CheckSchema's rules: a document of a known type with its documented
// fields passes; an unknown type, a field the contract does not document,
// a missing one, or a time stamp in another form fails.
func TestSchemaErrorHoldsDocumentsToTheContract(t *testing.T) {
	t.Parallel()
	const at = `"2026-01-02T03:04:05.123456Z"`
	event := func(typ, at, data string) []byte {
		return []byte(`{"seq":1,"type":"` + typ + `","run_id":"run_1","at":` + at + `,"data":` + data + `}`)
	}
	hook := func(typ, ts, data string) []byte {
		return []byte(`{"type":"` + typ + `","timestamp":` + ts + `,"data":` + data + `}`)
	}
	const delta = `{"text":"Hi"}`
	const idle = `{"thread_id":"th_1","agent_id":"ap_1"}`
	for _, tc := range []struct {
		name, schema string
		doc          []byte
		ok           bool
	}{
		{"Event", "Event", event("message.delta", at, delta), true},
		{"EventOfItsType", "MessageDeltaEvent", event("message.delta", at, delta), true},
		{"EventOfAnotherType", "ToolCallEvent", event("message.delta", at, delta), false},
		{"EventOfAnUnknownType", "Event", event("message.deleted", at, delta), false},
		{"EventWithAnUndocumentedField", "Event", event("message.delta", at, `{"text":"Hi","tokens":2}`), false},
		{"EventWithoutAField", "Event", event("message.delta", at, `{}`), false},
		{"EventDataOfAnotherType", "Event", event("message.delta", at, `{"call_id":"c","name":"n","arguments":"{}"}`), false},
		{"EventAtInMilliseconds", "Event", event("message.delta", `"2026-01-02T03:04:05.123Z"`, delta), false},
		{"EventAtWithTrailingZerosTrimmed", "Event", event("message.delta", `"2026-01-02T03:04:05.1234Z"`, delta), false},
		{"EventAtInAnotherZone", "Event", event("message.delta", `"2026-01-02T04:04:05.123456+01:00"`, delta), false},
		{"WebhookEvent", "WebhookEvent", hook("thread.idle", at, idle), true},
		{"WebhookEventOfItsType", "ThreadIdleWebhookEvent", hook("thread.idle", at, idle), true},
		{"WebhookEventOfAnUnknownType", "WebhookEvent", hook("thread.busy", at, idle), false},
		{"WebhookEventWithAnUndocumentedField", "WebhookEvent", hook("thread.idle", at, `{"thread_id":"th_1","agent_id":"ap_1","x":1}`), false},
		{"WebhookTimestampInSeconds", "WebhookEvent", hook("thread.idle", `"2026-01-02T03:04:05Z"`, idle), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := apitest.SchemaError(t, tc.schema, tc.doc)
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}
