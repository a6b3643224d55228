package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/subscription"
	"github.com/svcdev/svc/internal/webhook"
)

const hook = "https://93.184.216.34/hooks"

func TestEventTypesMatchSubscriptions(t *testing.T) {
	t.Parallel()
	require.Equal(t, subscription.EventTypes, webhook.EventTypes)
	require.True(t, slices.IsSorted(webhook.EventTypes))
}

// TestEmitReachesEnabledMatchingSubscriptions: one delivery per enabled
// subscription of the workspace that asked for the type; none for disabled
// ones, other types or other workspaces.
func TestEmitReachesEnabledMatchingSubscriptions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	wanted, _ := b.subscribe(t, nil, hook+"/a", webhook.AgentRevisionPublished, webhook.RunFailed)
	also, _ := b.subscribe(t, nil, hook+"/b", webhook.AgentRevisionPublished)
	disabled, _ := b.subscribe(t, nil, hook+"/c", webhook.AgentRevisionPublished)
	_, err := b.pool.Exec(ctx, `UPDATE subscription SET enabled = false WHERE id = $1`, disabled)
	require.NoError(t, err)
	b.subscribe(t, nil, hook+"/d", webhook.SkillRevisionPublished)

	other, err := identity.NewService(b.pool, nil).CreateWorkspace(ctx, b.caller, identity.CreateWorkspaceInput{Name: "other"})
	require.NoError(t, err)
	otherCaller := *b.caller
	otherCaller.WorkspaceID = other.Workspace.ID
	b.subscribeAs(t, &otherCaller, nil, hook+"/e", webhook.AgentRevisionPublished)

	at := time.Date(2026, 11, 22, 10, 15, 30, 123456000, time.UTC)
	e := webhook.Event{Type: webhook.AgentRevisionPublished, Time: at, Data: map[string]any{"agent_id": "ap_x", "revision_number": 2}}
	ids := b.emit(t, b.admin.WorkspaceID, e)
	require.Len(t, ids, 2)
	got := map[string]string{}
	for _, dlv := range ids {
		require.Regexp(t, `^dlv_[0-9a-z]{26}$`, dlv)
		var kind, sub, event, status string
		var attempts int
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT kind, subscription_id, event_type, status, attempts FROM outbox WHERE id = $1`, dlv).
			Scan(&kind, &sub, &event, &status, &attempts))
		require.Equal(t, []any{"webhook", webhook.AgentRevisionPublished, "pending", 0}, []any{kind, event, status, attempts})
		got[sub] = dlv
		require.Equal(t, map[string]any{
			"type": webhook.AgentRevisionPublished, "timestamp": "2026-11-22T10:15:30.123456Z",
			"data": map[string]any{"agent_id": "ap_x", "revision_number": float64(2)},
		}, b.payloadOf(t, dlv))
	}
	require.Contains(t, got, wanted)
	require.Contains(t, got, also)
	require.Empty(t, b.deliveryIDs(t, other.Workspace.ID))

	// An event nobody asked for writes nothing.
	require.Empty(t, b.emit(t, b.admin.WorkspaceID, webhook.Event{Type: webhook.ThreadIdle, Data: map[string]any{}}))
}

func TestEmitRolledBackLeavesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.subscribe(t, nil, hook, webhook.AgentRevisionPublished)
	boom := errors.New("the change failed")
	err := dbx.WithTx(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) error {
		if err := webhook.Emit(ctx, tx, b.admin.WorkspaceID, event("x")); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Empty(t, b.deliveryIDs(t, b.admin.WorkspaceID))
}

func TestEmitRefusesBadEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.subscribe(t, nil, hook, webhook.AgentRevisionPublished)
	for _, e := range []webhook.Event{
		{Type: "agent.published", Data: map[string]any{}},
		{Type: webhook.AgentRevisionPublished, Data: []string{"not", "an", "object"}},
		{Type: webhook.AgentRevisionPublished, Data: nil},
	} {
		err := dbx.WithTx(t.Context(), b.pool, func(ctx context.Context, tx pgx.Tx) error {
			return webhook.Emit(ctx, tx, b.admin.WorkspaceID, e)
		})
		require.Error(t, err, "%+v", e)
	}
	require.Empty(t, b.deliveryIDs(t, b.admin.WorkspaceID))
}

// TestEmitDefaultTime: an event without a time is stamped now, in UTC with
// fractional seconds.
func TestEmitDefaultTime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.subscribe(t, nil, hook, webhook.AgentRevisionPublished)
	before := time.Now()
	ids := b.emit(t, b.admin.WorkspaceID, event("now"))
	require.Len(t, ids, 1)
	stamp := b.payloadOf(t, ids[0])["timestamp"].(string)
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$`, stamp)
	at, err := time.Parse(time.RFC3339Nano, stamp)
	require.NoError(t, err)
	require.WithinDuration(t, before, at, time.Minute)
}

// TestEmitHoldsSubscriptionsAgainstDelete: a subscription an uncommitted event is going to
// is not deleted under it; the delete waits, and then removes the delivery
// with the subscription.
func TestEmitHoldsSubscriptionsAgainstDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	sub, _ := b.subscribe(t, nil, hook, webhook.AgentRevisionPublished)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	require.NoError(t, webhook.Emit(ctx, tx, b.admin.WorkspaceID, event("held")))

	deleted := make(chan error, 1)
	go func() {
		_, err := b.pool.Exec(ctx, `DELETE FROM subscription WHERE id = $1`, sub)
		deleted <- err
	}()
	// The delete is blocked on the emitting transaction's key-share lock.
	require.Eventually(t, func() bool {
		var waiting bool
		err := b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM subscription%')`).Scan(&waiting)
		return err == nil && waiting
	}, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, <-deleted)
	require.Empty(t, b.deliveryIDs(t, b.admin.WorkspaceID), "the delivery went with its subscription")
}

// TestInvitationAcceptedEmits: accepting a workspace invitation emits
// invitation.accepted to the workspace's subscribers; an organization
// invitation emits nothing.
func TestInvitationAcceptedEmits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	sub, _ := b.subscribe(t, nil, hook, webhook.InvitationAccepted)
	svc, err := invitation.NewService(invitation.Options{Pool: b.pool, Keyring: b.ring, PublicURL: "https://svc.example.com", TTL: time.Hour, ConfirmationTTL: time.Hour})
	require.NoError(t, err)
	accept := func(target invitation.Target, email, role string) invitation.AcceptResult {
		created, err := svc.Create(ctx, invitation.CreateInput{Caller: b.caller, Target: target, Email: email, Role: role})
		require.NoError(t, err)
		u, err := url.Parse(created.URL)
		require.NoError(t, err)
		sent, err := svc.Accept(ctx, invitation.AcceptInput{Token: u.Query().Get("token"), Password: "correct horse battery"})
		require.NoError(t, err)
		require.True(t, sent.ConfirmationSent, "a new address confirms by mail")
		// The invitee follows the link mailed to the address.
		var payload, sealed []byte
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT payload, sealed FROM outbox
			WHERE payload->>'template' = 'invitation_confirmation' AND payload->>'to' = $1`, email).Scan(&payload, &sealed))
		var p invitation.ConfirmationMailPayload
		require.NoError(t, json.Unmarshal(payload, &p))
		plain, err := b.ring.Open(sealed, invitation.ConfirmationMailAAD(p.MailID))
		require.NoError(t, err)
		var secrets invitation.ConfirmationMailSecrets
		require.NoError(t, json.Unmarshal(plain, &secrets))
		link, err := url.Parse(secrets.Link)
		require.NoError(t, err)
		res, err := svc.Confirm(ctx, link.Query().Get("token"))
		require.NoError(t, err)
		return res
	}

	res := accept(invitation.Target{WorkspaceID: b.admin.WorkspaceID}, "new@example.com", auth.RoleEditor)
	ids := b.deliveryIDs(t, b.admin.WorkspaceID)
	require.Len(t, ids, 1)
	body := b.payloadOf(t, ids[0])
	require.Equal(t, webhook.InvitationAccepted, body["type"])
	require.Equal(t, map[string]any{
		"invitation_id": res.Invitation.ID, "workspace_id": b.admin.WorkspaceID, "email": "new@example.com",
		"role": "editor", "principal_id": res.PrincipalID, "invited_by_id": b.admin.PrincipalID,
	}, body["data"])
	at, err := time.Parse(time.RFC3339Nano, body["timestamp"].(string))
	require.NoError(t, err)
	require.True(t, at.Equal(*res.Invitation.AcceptedAt), "the acceptance's time")
	var target string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT subscription_id FROM outbox WHERE id = $1`, ids[0]).Scan(&target))
	require.Equal(t, sub, target)

	accept(invitation.Target{OrganizationID: b.admin.OrganizationID}, "org@example.com", auth.OrgMember)
	require.Len(t, b.deliveryIDs(t, b.admin.WorkspaceID), 1, "an organization invitation emits nothing")
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE kind = 'webhook'`).Scan(&n))
	require.Equal(t, 1, n)
}
