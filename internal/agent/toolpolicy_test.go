package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/apperr"
)

func TestToolPolicy(t *testing.T) {
	t.Parallel()
	c, err := agent.Normalize(json.RawMessage(`{"model":"m"}`))
	require.NoError(t, err)
	require.Equal(t, agent.ToolPolicy{Toolsets: map[string]string{}, Tools: map[string]string{}, OnTimeout: agent.TimeoutDeny}, c.ToolPolicy)
	require.Equal(t, agent.PolicyAllow, c.ToolPolicy.Decide("run_command", agent.ToolsetEnvironment), "everything is allowed by default")

	c, err = agent.Normalize(json.RawMessage(`{"model":"m","tool_policy":{"toolsets":{"environment":"ask","web":"deny"},` +
		`"tools":{"read_file":"allow","web_fetch":"ask"},"approval_timeout_seconds":60,"on_timeout":"fail"}}`))
	require.NoError(t, err)
	p := c.ToolPolicy
	require.Equal(t, agent.PolicyAsk, p.Decide("run_command", agent.ToolsetEnvironment), "the toolset's decision")
	require.Equal(t, agent.PolicyAllow, p.Decide("read_file", agent.ToolsetEnvironment), "the tool's own decision wins")
	require.Equal(t, agent.PolicyAsk, p.Decide("web_fetch", agent.ToolsetWeb))
	require.Equal(t, agent.PolicyDeny, p.Decide("web_search", agent.ToolsetWeb))
	require.Equal(t, agent.PolicyAllow, p.Decide("memory_search", agent.ToolsetMemory))
	require.Equal(t, 60, *p.ApprovalTimeoutSeconds)
	require.Equal(t, agent.TimeoutFail, p.OnTimeout)

	// A revision stored without a policy reads as allowing everything.
	var old agent.Config
	require.NoError(t, json.Unmarshal([]byte(`{"model":"m"}`), &old))
	b, err := json.Marshal(old.ToolPolicy)
	require.NoError(t, err)
	require.JSONEq(t, `{"toolsets":{},"tools":{},"approval_timeout_seconds":null,"on_timeout":"deny"}`, string(b))

	for raw, field := range map[string]string{
		`{"model":"m","tool_policy":{"toolsets":{"shell":"ask"}}}`:        "config.tool_policy.toolsets.shell",
		`{"model":"m","tool_policy":{"toolsets":{"web":"maybe"}}}`:        "config.tool_policy.toolsets.web",
		`{"model":"m","tool_policy":{"tools":{"bad name":"ask"}}}`:        "config.tool_policy.tools",
		`{"model":"m","tool_policy":{"tools":{"web_fetch":"sometimes"}}}`: "config.tool_policy.tools.web_fetch",
		`{"model":"m","tool_policy":{"approval_timeout_seconds":0}}`:      "config.tool_policy.approval_timeout_seconds",
		`{"model":"m","tool_policy":{"approval_timeout_seconds":604801}}`: "config.tool_policy.approval_timeout_seconds",
		`{"model":"m","tool_policy":{"on_timeout":"retry"}}`:              "config.tool_policy.on_timeout",
		`{"model":"m","tool_policy":{"default":"ask"}}`:                   "config",
	} {
		_, err := agent.Normalize(json.RawMessage(raw))
		e, ok := apperr.As(err)
		require.True(t, ok, raw)
		require.Equal(t, apperr.KindInvalidArgument, e.Kind, raw)
		require.Equal(t, field, e.Details[0].Field, raw)
	}
}
