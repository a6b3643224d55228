package httpapi

import (
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/openapi"
	"github.com/svcdev/svc/internal/environment/template"
	"github.com/svcdev/svc/internal/labels"
	"github.com/svcdev/svc/internal/subscription"
)

// TestLiveResourceLimitsMatchTheContract keeps the limits the contract states
// (and its validator enforces first) equal to the services' own.
func TestLiveResourceLimitsMatchTheContract(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Load()
	require.NoError(t, err)
	schemas := doc.Components.Schemas

	var events []string
	for _, v := range schemas["WebhookEventType"].Value.Enum {
		events = append(events, v.(string))
	}
	require.Equal(t, subscription.EventTypes, events, "the webhook event types")
	require.Equal(t, uint64(len(subscription.EventTypes)), *schemas["WebhookEventTypes"].Value.MaxItems)

	l := schemas["Labels"].Value
	require.Equal(t, uint64(labels.MaxLabels), *l.MaxProps)
	require.Equal(t, uint64(labels.MaxValueChars), *l.AdditionalProperties.Schema.Value.MaxLength)

	list := doc.Paths.Find("/api/v1/environment-templates").Get
	i := slices.IndexFunc(list.Parameters, func(p *openapi3.ParameterRef) bool { return p.Value != nil && p.Value.Name == "label" })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, uint64(labels.MaxSelectors), *list.Parameters[i].Value.Schema.Value.MaxItems)

	for _, req := range []string{"CreateEnvironmentTemplateRequest", "UpdateEnvironmentTemplateRequest"} {
		for _, field := range []string{"idle_stop_seconds", "idle_delete_seconds"} {
			idle := schemas[req].Value.Properties[field].Value
			require.Equal(t, float64(template.MinIdleSeconds), *idle.Min, "%s.%s", req, field)
			require.Equal(t, float64(template.MaxIdleSeconds), *idle.Max, "%s.%s", req, field)
		}
	}
}
