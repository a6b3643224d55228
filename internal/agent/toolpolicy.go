package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
)

// ToolPolicy says, per tool, whether a run calls it at once (allow), only
// once a person approved the call (ask), or never (deny)
// (docs/decisions/0052-tool-approvals.md). A tool's own entry in Tools
// wins over its toolset's in Toolsets; a tool named in neither is allowed.
type ToolPolicy struct {
	// Toolsets maps a toolset's name (Toolsets lists them) to a decision.
	Toolsets map[string]string `json:"toolsets"`
	// Tools maps a tool's name, as the model sees it, to a decision.
	Tools map[string]string `json:"tools"`
	// ApprovalTimeoutSeconds is how long a call waits for a person; nil
	// is the deployment's worker.approval_timeout_seconds.
	ApprovalTimeoutSeconds *int `json:"approval_timeout_seconds"`
	// OnTimeout is what a call nobody decided on in time does:
	// TimeoutDeny (the model is told it was denied) or TimeoutFail (the
	// run fails); "" (a revision stored without it) is TimeoutDeny.
	OnTimeout string `json:"on_timeout"`
}

// The decisions of a tool policy.
const (
	PolicyAllow = "allow"
	PolicyAsk   = "ask"
	PolicyDeny  = "deny"
)

// What a call nobody decided on in time does.
const (
	TimeoutDeny = "deny"
	TimeoutFail = "fail"
)

// The toolsets' names in a tool policy: each is a package under
// internal/tool, which sets its tools' tool.Tool.Toolset to it.
const (
	ToolsetWeb         = "web"
	ToolsetEnvironment = "environment"
	ToolsetMemory      = "memory"
	ToolsetConnection  = "connection"
	ToolsetSubagent    = "subagent"
)

// Toolsets lists the toolsets' names, sorted.
var Toolsets = []string{ToolsetConnection, ToolsetEnvironment, ToolsetMemory, ToolsetSubagent, ToolsetWeb}

// Bounds of a tool policy.
const (
	MaxPolicyTools                = 256
	MaxApprovalTimeoutSeconds     = 7 * 86400
	DefaultApprovalTimeoutSeconds = 86400
)

// toolNamePattern is a tool's name as every vendor accepts it (tool.Tool).
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Decide answers the decision of the policy on tool name of toolset.
func (p ToolPolicy) Decide(name, toolset string) string {
	if d, ok := p.Tools[name]; ok {
		return d
	}
	if d, ok := p.Toolsets[toolset]; ok {
		return d
	}
	return PolicyAllow
}

// OnTimeoutOrDefault is OnTimeout, TimeoutDeny when unset.
func (p ToolPolicy) OnTimeoutOrDefault() string {
	if p.OnTimeout == "" {
		return TimeoutDeny
	}
	return p.OnTimeout
}

type toolPolicyInput struct {
	Toolsets               map[string]string `json:"toolsets"`
	Tools                  map[string]string `json:"tools"`
	ApprovalTimeoutSeconds *int              `json:"approval_timeout_seconds"`
	OnTimeout              *string           `json:"on_timeout"`
}

func normalizeToolPolicy(in *toolPolicyInput, bad func(string, string)) ToolPolicy {
	out := ToolPolicy{Toolsets: map[string]string{}, Tools: map[string]string{}, OnTimeout: TimeoutDeny}
	if in == nil {
		return out
	}
	valid := func(d string) bool { return d == PolicyAllow || d == PolicyAsk || d == PolicyDeny }
	for _, name := range slices.Sorted(maps.Keys(in.Toolsets)) {
		d := in.Toolsets[name]
		field := "tool_policy.toolsets." + name
		switch {
		case !slices.Contains(Toolsets, name):
			bad(field, fmt.Sprintf("is not a toolset; the toolsets are %v", Toolsets))
		case !valid(d):
			bad(field, "must be allow, ask or deny")
		}
		out.Toolsets[name] = d
	}
	if len(in.Tools) > MaxPolicyTools {
		bad("tool_policy.tools", fmt.Sprintf("at most %d tools", MaxPolicyTools))
	}
	for _, name := range slices.Sorted(maps.Keys(in.Tools)) {
		d := in.Tools[name]
		field := "tool_policy.tools." + name
		switch {
		case !toolNamePattern.MatchString(name):
			bad("tool_policy.tools", "a tool name is 1 to 64 of a-z A-Z 0-9 _ -")
		case !valid(d):
			bad(field, "must be allow, ask or deny")
		}
		out.Tools[name] = d
	}
	if t := in.ApprovalTimeoutSeconds; t != nil {
		if *t < 1 || *t > MaxApprovalTimeoutSeconds {
			bad("tool_policy.approval_timeout_seconds", fmt.Sprintf("must be 1 to %d, or null for the deployment's default", MaxApprovalTimeoutSeconds))
		}
		out.ApprovalTimeoutSeconds = t
	}
	if in.OnTimeout != nil {
		out.OnTimeout = *in.OnTimeout
		if out.OnTimeout != TimeoutDeny && out.OnTimeout != TimeoutFail {
			bad("tool_policy.on_timeout", "must be deny or fail")
		}
	}
	return out
}

// MarshalJSON writes the policy with every member present: a revision
// stored before tool policies existed reads as allowing every tool.
func (p ToolPolicy) MarshalJSON() ([]byte, error) {
	type plain ToolPolicy
	if p.Toolsets == nil {
		p.Toolsets = map[string]string{}
	}
	if p.Tools == nil {
		p.Tools = map[string]string{}
	}
	p.OnTimeout = p.OnTimeoutOrDefault()
	return json.Marshal(plain(p))
}
