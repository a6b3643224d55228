package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/llm/llmtest"
	"github.com/svcdev/svc/internal/testfactory"
)

// TestRunApprovalsOverTheAPI: an agent whose policy holds its environment
// toolset runs; its command waits for a decision, the run shows waiting
// and lists the call; a viewer may read it but not decide; a decision on
// a call that does not wait is 409; the decision is idempotent with an
// Idempotency-Key; approved, the command runs and the run succeeds.
func TestRunApprovalsOverTheAPI(t *testing.T) {
	t.Parallel()
	b, _ := setupE2E(t, []llmtest.Turn{
		{Text: "Counting.", ToolCalls: []llmtest.Call{{Name: "run_command", Arguments: `{"command":"echo one > a.txt; ls | wc -l"}`}}},
		{Text: "One file."},
	}, nil)
	tpl := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/environment-templates", nil)["items"].([]any)[0].(map[string]any)
	ag := b.must(t, http.StatusCreated, http.MethodPost, "/api/v1/agents", map[string]any{"name": "careful", "config": map[string]any{
		"model": "main", "tools": map[string]any{"environment": map[string]any{"template_id": tpl["id"]}},
		"tool_policy": map[string]any{"toolsets": map[string]any{"environment": "ask"}, "approval_timeout_seconds": 600}}})
	cfg := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/agents/"+ag["id"].(string)+"/revisions/"+ag["default_revision_id"].(string), nil)["config"]
	require.Equal(t, map[string]any{"toolsets": map[string]any{"environment": "ask"}, "tools": map[string]any{},
		"approval_timeout_seconds": float64(600), "on_timeout": "deny"}, cfg.(map[string]any)["tool_policy"])

	r := b.must(t, http.StatusAccepted, http.MethodPost, "/api/v1/runs", map[string]any{"agent_id": ag["id"], "input": "How many files?"})
	path := "/api/v1/runs/" + r["id"].(string)
	require.Eventually(t, func() bool {
		return b.must(t, http.StatusOK, http.MethodGet, path, nil)["status"] == "waiting"
	}, 15*time.Second, 20*time.Millisecond)
	waiting := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/runs?status=waiting", nil)["items"].([]any)
	require.Len(t, waiting, 1)
	items := b.must(t, http.StatusOK, http.MethodGet, path+"/approvals", nil)["items"].([]any)
	require.Len(t, items, 1)
	call := items[0].(map[string]any)
	require.Equal(t, "run_command", call["name"])
	require.Equal(t, "pending", call["status"])

	viewer := testfactory.AddMember(t, b.h.App.Pool, b.admin.OrganizationID, b.admin.WorkspaceID, testfactory.MemberOpts{WorkspaceRole: "viewer"})
	status, _, _ := b.do(t, http.MethodGet, path+"/approvals", nil, as(viewer.Token)...)
	require.Equal(t, http.StatusOK, status)
	decide := map[string]any{"call_id": call["call_id"], "decision": "approve", "message": "fine"}
	status, out, _ := b.do(t, http.MethodPost, path+"/approvals", decide, as(viewer.Token)...)
	require.Equal(t, http.StatusForbidden, status, out)

	b.must(t, http.StatusConflict, http.MethodPost, path+"/approvals", map[string]any{"call_id": "call_none", "decision": "approve"})
	b.must(t, http.StatusBadRequest, http.MethodPost, path+"/approvals", map[string]any{"call_id": call["call_id"], "decision": "maybe"})

	first := b.must(t, http.StatusOK, http.MethodPost, path+"/approvals", decide, "Idempotency-Key", "decide-1")
	require.Equal(t, "approved", first["status"])
	require.Equal(t, b.admin.PrincipalID, first["decided_by_id"])
	status, again, hdr := b.do(t, http.MethodPost, path+"/approvals", decide, "Idempotency-Key", "decide-1")
	require.Equal(t, http.StatusOK, status, again)
	require.Equal(t, "true", hdr.Get("Idempotent-Replayed"))
	require.Equal(t, first, again)
	b.must(t, http.StatusConflict, http.MethodPost, path+"/approvals", decide)

	require.Eventually(t, func() bool {
		return b.must(t, http.StatusOK, http.MethodGet, path, nil)["status"] == "succeeded"
	}, 15*time.Second, 20*time.Millisecond)
	evs := b.must(t, http.StatusOK, http.MethodGet, "/api/v1/threads/"+r["thread_id"].(string)+"/events", nil)["items"].([]any)
	var types []string
	for _, e := range evs {
		if ty := e.(map[string]any)["type"].(string); ty != "message.delta" {
			types = append(types, ty)
		}
	}
	require.Subset(t, types, []string{"approval.requested", "approval.decided", "tool.result"})
	require.Empty(t, b.must(t, http.StatusOK, http.MethodGet, path+"/approvals", nil)["items"])
}
