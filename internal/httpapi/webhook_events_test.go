package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
	"github.com/svcdev/svc/internal/apitest"
	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/testfactory"
	"github.com/svcdev/svc/internal/timestamp"
	"github.com/svcdev/svc/internal/webhook"
	"github.com/svcdev/svc/internal/webhook/webhooktest"
)

// schemaOf answers the contract's schema for one member of the union
// schema union (Event, WebhookEvent), by its discriminator's mapping.
func schemaOf(t *testing.T, union, typ string) string {
	t.Helper()
	d := apitest.Contract(t).Components.Schemas[union].Value.Discriminator
	require.NotNil(t, d, "%s has a discriminator", union)
	ref, ok := d.Mapping[typ]
	require.True(t, ok, "%s maps type %q", union, typ)
	return strings.TrimPrefix(ref.Ref, "#/components/schemas/")
}

// checkMember checks raw, a document of union's type typ, against the
// union and against typ's own schema.
func checkMember(t *testing.T, union, typ string, raw []byte) {
	t.Helper()
	apitest.CheckSchema(t, union, raw)
	apitest.CheckSchema(t, schemaOf(t, union, typ), raw)
}

// TestWebhookEventsMatchTheContract drives real changes and runs through
// the API: publishing an agent and a skill, accepting an invitation, a run
// that succeeds (with a local environment), one that fails, one that waits
// for a decision and is cancelled, and deleting the environment. Every
// webhook event type but environment.stopped (a driver that stops;
// internal/environment's TestRuntimeMaintain covers it) reaches a receiver,
// signed, and each body matches its own schema of the contract, its
// timestamp in the one written form; so do the threads' events, in lists
// and in the stream.
func TestWebhookEventsMatchTheContract(t *testing.T) {
	t.Parallel()
	recv := webhooktest.NewReceiver(t)
	b, counter := setupE2E(t, []llmtest.Turn{
		// A turn is picked by the assistant messages of the conversation.
		{Text: "Writing.", ToolCalls: []llmtest.Call{{Name: "run_command", Arguments: `{"command":"echo hi > a.txt"}`}}},
		{Text: "Done."},
		{Status: http.StatusBadRequest},
	}, func(c *config.Config) {
		c.EndpointPolicy.AllowedPorts = append(c.EndpointPolicy.AllowedPorts, int(recv.Port))
	})
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	contractTypes := apitest.Contract(t).Components.Schemas["WebhookEventType"].Value.Enum
	all := make([]string, 0, len(contractTypes))
	for _, v := range contractTypes {
		all = append(all, v.(string))
	}
	require.Equal(t, webhook.EventTypes, all, "the contract lists the event types the code emits")
	sub := b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/subscriptions", map[string]any{
		"url": recv.URL("127.0.0.1", "/hooks"), "event_types": all})
	secret := sub["secret"].(string)

	// Revisions published.
	tpl := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/environment-templates", nil)["items"].([]any)[0].(map[string]any)
	careful := b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/agents", map[string]any{"name": "careful", "config": map[string]any{
		"model": "main", "tools": map[string]any{"environment": map[string]any{"template_id": tpl["id"]}},
		"tool_policy": map[string]any{"toolsets": map[string]any{"environment": "ask"}, "approval_timeout_seconds": 600}}})
	b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/skills", map[string]any{"name": "brief", "config": map[string]any{"instructions": "Be brief."}})

	// An invitation accepted by someone with an account.
	// An account of no workspace (its key, unused, names this one).
	guest := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{Password: "the guests password"})
	inv := b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/workspaces/"+b.admin.WorkspaceID+"/invitations",
		map[string]any{"email": guest.Email, "role": "editor"})
	link, err := url.Parse(inv["invitation_url"].(string))
	require.NoError(t, err)
	status, out, _ := b.do(t, http.MethodPost, "/api/v1/invitations/accept",
		map[string]any{"token": link.Query().Get("token"), "password": "the guests password"}, "Authorization", "")
	require.Equal(t, http.StatusOK, status, out)

	// Runs: one succeeds, one fails, one waits for a decision and is cancelled.
	waitStatus := func(runID, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			last := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/runs/"+runID, nil)
			if last["status"] == want {
				return
			}
			require.True(t, time.Now().Before(deadline), "run %s never became %s: %v", runID, want, last)
			time.Sleep(20 * time.Millisecond)
		}
	}
	ok := b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": counter, "input": "Write a file."})
	waitStatus(ok["id"].(string), "succeeded")
	failed := b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": counter, "input": "Fail.", "thread_id": ok["thread_id"]})
	waitStatus(failed["id"].(string), "failed")
	held := b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": careful["id"], "input": "Count."})
	waitStatus(held["id"].(string), "waiting")
	b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs/"+held["id"].(string)+"/cancel", nil)
	waitStatus(held["id"].(string), "cancelled")

	// The successful run's environment, deleted.
	envs := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/environments", nil)["items"].([]any)
	require.Len(t, envs, 1)
	env := envs[0].(map[string]any)
	status, out, _ = b.do(t, http.MethodDelete, "/api/v1/environments/"+env["id"].(string), nil, "If-Match", etag(env))
	require.Equal(t, http.StatusNoContent, status, out)
	_, err = b.h.App.Sweeps.RunOnce(ctx, "maintain_environments")
	require.NoError(t, err)

	want := slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == webhook.EnvironmentStopped })
	var reqs []webhooktest.Request
	seen := map[string]int{}
	for n := 1; len(seen) < len(want); n++ {
		reqs, err = recv.WaitFor(ctx, n)
		require.NoError(t, err, "delivered so far: %v", seen)
		var head struct {
			Type string `json:"type"`
		}
		require.NoError(t, json.Unmarshal(reqs[n-1].Body, &head))
		seen[head.Type]++
	}
	got := make([]string, 0, len(seen))
	for typ := range seen {
		got = append(got, typ)
	}
	require.ElementsMatch(t, want, got)

	runStatus := map[string]string{
		webhook.RunAccepted: "accepted", webhook.RunStarted: "running", webhook.RunWaiting: "waiting",
		webhook.RunSucceeded: "succeeded", webhook.RunFailed: "failed", webhook.RunCancelled: "cancelled",
	}
	for _, r := range reqs {
		var ev struct {
			Type      string         `json:"type"`
			Timestamp string         `json:"timestamp"`
			Data      map[string]any `json:"data"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &ev))
		t.Run(ev.Type+"/"+r.Header.Get("webhook-id"), func(t *testing.T) {
			require.NoError(t, webhooktest.Verify(secret, r.Header, r.Body, time.Now(), webhooktest.DefaultTolerance))
			_, err := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
			require.NoError(t, err, "webhook-timestamp is unix seconds")
			checkMember(t, "WebhookEvent", ev.Type, r.Body)
			require.Regexp(t, timestamp.Pattern, ev.Timestamp)
			if want, ok := runStatus[ev.Type]; ok {
				require.Equal(t, want, ev.Data["status"])
				if ev.Type == webhook.RunFailed || ev.Type == webhook.RunCancelled {
					require.NotNil(t, ev.Data["error"], "a failed or cancelled run says why")
				} else {
					require.Nil(t, ev.Data["error"])
				}
			}
			// The delivery's view (checked against the contract by the
			// client) carries the same body.
			view := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/deliveries/"+r.Header.Get("webhook-id"), nil)
			require.Equal(t, ev.Type, view["event_type"])
			payload, err := json.Marshal(view["payload"])
			require.NoError(t, err)
			require.JSONEq(t, string(r.Body), string(payload))
		})
	}

	// The typed Go client tells the members apart by their discriminator.
	page, err := b.api.ListThreadEventsWithResponse(ctx, ok["thread_id"].(string), nil)
	require.NoError(t, err)
	require.NotNil(t, page.JSON200, string(page.Body))
	var statuses []client.RunStatus
	for _, e := range page.JSON200.Items {
		v, err := e.ValueByDiscriminator()
		require.NoError(t, err)
		switch v := v.(type) {
		case client.RunStatusEvent:
			require.Equal(t, client.RunStatusEventTypeRunStatus, v.Type)
			statuses = append(statuses, v.Data.Status)
		case client.ToolCallEvent:
			require.Equal(t, "run_command", v.Data.Name)
		}
	}
	require.Equal(t, []client.RunStatus{client.RunStatusAccepted, client.RunStatusRunning, client.RunStatusSucceeded,
		client.RunStatusAccepted, client.RunStatusRunning, client.RunStatusFailed}, statuses)
	dlv, err := b.api.GetDeliveryWithResponse(ctx, reqs[0].Header.Get("webhook-id"))
	require.NoError(t, err)
	require.NotNil(t, dlv.JSON200, string(dlv.Body))
	typ, err := dlv.JSON200.Payload.Discriminator()
	require.NoError(t, err)
	require.EqualValues(t, dlv.JSON200.EventType, typ)

	// The threads' events: listed (the client checks every page against the
	// contract) and streamed, each against its own schema.
	for _, th := range []string{ok["thread_id"].(string), held["thread_id"].(string)} {
		items := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/threads/"+th+"/events", nil)["items"].([]any)
		require.NotEmpty(t, items)
		s := b.openStream(t, "/api/v1/threads/"+th+"/stream")
		streamed := s.expect(t, 1, len(items))
		s.close()
		for i, it := range items {
			raw, err := json.Marshal(it)
			require.NoError(t, err)
			typ := it.(map[string]any)["type"].(string)
			checkMember(t, "Event", typ, raw)
			again, err := json.Marshal(streamed[i])
			require.NoError(t, err)
			require.JSONEq(t, string(raw), string(again), "the list and the stream write an event alike")
		}
	}
}
