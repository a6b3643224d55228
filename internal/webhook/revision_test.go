package webhook_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/webhook"
)

// TestRevisionPublishedEmits: creating an agent publishes revision 1, a new
// configuration publishes the next; an identical publish emits nothing, and
// neither does a refused one.
func TestRevisionPublishedEmits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	testfactory.Model(t, b.pool, b.admin.Owner(), &testfactory.ModelOpts{API: "responses", Provider: &testfactory.ProviderOpts{Type: "openai"}})
	sub, _ := b.subscribe(t, nil, hook, webhook.AgentRevisionPublished)
	b.subscribe(t, nil, hook+"/skills", webhook.SkillRevisionPublished)
	reg, err := catalog.New(catalog.Options{})
	require.NoError(t, err)
	agents := agent.NewService(b.pool, reg, refcheck.None{})
	editor := &auth.Caller{PrincipalID: b.admin.PrincipalID, OrganizationID: b.admin.OrganizationID, WorkspaceID: b.admin.WorkspaceID, Role: auth.RoleEditor}

	head, err := agents.Create(ctx, editor, revision.CreateInput{Name: "triage", Config: json.RawMessage(`{"model":"main"}`)})
	require.NoError(t, err)
	ids := b.deliveryIDs(t, b.admin.WorkspaceID)
	require.Len(t, ids, 1)
	first := b.payloadOf(t, ids[0])
	require.Equal(t, webhook.AgentRevisionPublished, first["type"])
	require.Equal(t, map[string]any{
		"agent_id": head.ID, "name": "triage", "revision_id": head.DefaultRevisionID, "revision_number": float64(1),
		"default_revision_id": head.DefaultRevisionID, "published_by_id": b.admin.PrincipalID,
	}, first["data"])
	var target string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT subscription_id FROM outbox WHERE id = $1`, ids[0]).Scan(&target))
	require.Equal(t, sub, target, "only the agent events' subscriber")

	// Identical content: the same revision, nothing emitted.
	same, err := agents.Publish(ctx, editor, revision.PublishInput{HeadID: head.ID, Config: json.RawMessage(`{"model":"main"}`)})
	require.NoError(t, err)
	require.False(t, same.Created)
	require.Len(t, b.deliveryIDs(t, b.admin.WorkspaceID), 1)

	// A refused publish (a model that does not exist) emits nothing either.
	_, err = agents.Publish(ctx, editor, revision.PublishInput{HeadID: head.ID, Config: json.RawMessage(`{"model":"absent"}`)})
	require.Error(t, err)
	require.Len(t, b.deliveryIDs(t, b.admin.WorkspaceID), 1)

	no := false
	p, err := agents.Publish(ctx, editor, revision.PublishInput{HeadID: head.ID, Config: json.RawMessage(`{"model":"main","instructions":"v2"}`), MakeDefault: &no})
	require.NoError(t, err)
	require.True(t, p.Created)
	ids = b.deliveryIDs(t, b.admin.WorkspaceID)
	require.Len(t, ids, 2)
	second := b.payloadOf(t, ids[1])
	require.Equal(t, map[string]any{
		"agent_id": head.ID, "name": "triage", "revision_id": p.Revision.ID, "revision_number": float64(2),
		"default_revision_id": head.DefaultRevisionID, "published_by_id": b.admin.PrincipalID,
	}, second["data"], "not made the default: the default stays revision 1")
	at, err := time.Parse(time.RFC3339Nano, second["timestamp"].(string))
	require.NoError(t, err)
	require.True(t, at.Equal(p.Revision.CreatedAt), "the revision's creation time")

	// Skills emit skill.revision_published, to their own subscribers.
	skills := skill.NewService(b.pool, refcheck.None{})
	sk, err := skills.Create(ctx, editor, revision.CreateInput{Name: "summarize", Config: json.RawMessage(`{"instructions":"Summarize."}`)})
	require.NoError(t, err)
	ids = b.deliveryIDs(t, b.admin.WorkspaceID)
	require.Len(t, ids, 3)
	third := b.payloadOf(t, ids[2])
	require.Equal(t, webhook.SkillRevisionPublished, third["type"])
	require.Equal(t, map[string]any{
		"skill_id": sk.ID, "name": "summarize", "revision_id": sk.DefaultRevisionID, "revision_number": float64(1),
		"default_revision_id": sk.DefaultRevisionID, "published_by_id": b.admin.PrincipalID,
	}, third["data"])
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT subscription_id FROM outbox WHERE id = $1`, ids[2]).Scan(&target))
	require.NotEqual(t, sub, target)
}
