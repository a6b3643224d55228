// Package agent manages agents: revisioned heads (ap_…) whose revisions hold
// an agent configuration (Config). The head and revision machinery is
// package revision's; this package owns the configuration: its shape, its
// bounds and defaults, and the checks of everything it references
// (docs/decisions/0020-agents-and-skills.md).
package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/provider/catalog"
)

// Config is an agent's configuration as stored in a revision: normalized, so
// every member is present and every default applied.
type Config struct {
	// Model is the key of a model of the workspace.
	Model string `json:"model"`
	// Instructions are the system instructions; may be empty.
	Instructions string        `json:"instructions"`
	Tools        Tools         `json:"tools"`
	Skills       []SkillRef    `json:"skills"`
	Memories     []MemoryRef   `json:"memories"`
	Subagents    []SubagentRef `json:"subagents"`
	Limits       Limits        `json:"limits"`
	// Context is how runs fit the thread into the model's context window.
	Context Context `json:"context"`
	// ToolPolicy says which tool calls need a person's approval.
	ToolPolicy ToolPolicy `json:"tool_policy"`
}

// Context is how a run fits the thread into the model's context window
// (docs/decisions/0051-context-fitting.md).
type Context struct {
	// Strategy is ContextSummarize or ContextTruncate; "" (a revision
	// stored without it) is ContextSummarize.
	Strategy string `json:"strategy"`
}

// The context strategies.
const (
	ContextSummarize = "summarize"
	ContextTruncate  = "truncate"
)

// Tools are the toolsets an agent may call.
type Tools struct {
	// Web is the web toolset, nil for none.
	Web *WebTools `json:"web"`
	// Environment gives the agent an environment started from a template, with
	// tools that act in it; skills' packages are unpacked there. nil for none.
	Environment *EnvironmentTools `json:"environment"`
	// Connections expose actions of connected accounts as tools.
	Connections []ConnectionTools `json:"connections"`
}

// WebTools is the web toolset: a web provider and the operations it serves.
type WebTools struct {
	ProviderID string `json:"provider_id"`
	// Operations are sorted and distinct: a subset of what the provider's type
	// serves (catalog.Operation).
	Operations []string `json:"operations"`
}

// EnvironmentTools names the environment template of the agent's environment.
type EnvironmentTools struct {
	TemplateID string `json:"template_id"`
}

// ConnectionTools is one connection whose actions the agent may call.
type ConnectionTools struct {
	ConnectionID string `json:"connection_id"`
	// Actions is the allow-list, sorted and distinct; nil allows every action
	// the connection offers.
	Actions []string `json:"actions"`
}

// SkillRef is a skill the agent uses: its default revision at run start, or
// the pinned revision.
type SkillRef struct {
	SkillID    string  `json:"skill_id"`
	RevisionID *string `json:"revision_id"`
}

// MemoryRef is a memory the agent reads and writes.
type MemoryRef struct {
	MemoryID string `json:"memory_id"`
}

// SubagentRef is an agent this agent may delegate to (its default revision
// at the time of the call).
type SubagentRef struct {
	AgentID string `json:"agent_id"`
}

// Limits bound one run of the agent.
type Limits struct {
	MaxSteps       int `json:"max_steps"`
	MaxTokens      int `json:"max_tokens"`
	TimeoutSeconds int `json:"timeout_seconds"`
}

// Bounds of a configuration, and the limits' defaults.
const (
	MaxInstructions = 65536 // characters
	MaxSkills       = 32
	MaxMemories     = 16
	MaxSubagents    = 16
	MaxConnections  = 32
	MaxActions      = 128

	DefaultMaxSteps       = 100
	DefaultMaxTokens      = 1_000_000
	DefaultTimeoutSeconds = 3600
	MaxMaxSteps           = 1000
	MaxMaxTokens          = 10_000_000
	MaxTimeoutSeconds     = 86400
)

// actionPattern is a connection action name, as connectors spell them
// (GITHUB_CREATE_ISSUE, gmail.send, slack:post-message).
var actionPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

// input is a configuration as sent: optional members may be left out.
type input struct {
	Model        string           `json:"model"`
	Instructions *string          `json:"instructions"`
	Tools        *toolsInput      `json:"tools"`
	Skills       []SkillRef       `json:"skills"`
	Memories     []MemoryRef      `json:"memories"`
	Subagents    []SubagentRef    `json:"subagents"`
	Limits       *limitsInput     `json:"limits"`
	Context      *contextInput    `json:"context"`
	ToolPolicy   *toolPolicyInput `json:"tool_policy"`
}

type contextInput struct {
	Strategy *string `json:"strategy"`
}

type toolsInput struct {
	Web         *WebTools         `json:"web"`
	Environment *EnvironmentTools `json:"environment"`
	Connections []ConnectionTools `json:"connections"`
}

type limitsInput struct {
	MaxSteps       *int `json:"max_steps"`
	MaxTokens      *int `json:"max_tokens"`
	TimeoutSeconds *int `json:"timeout_seconds"`
}

// Normalize decodes and validates a configuration without the database, and
// returns it normalized: absent members become empty or their defaults, and
// web operations and connection actions are sorted, so that two requests that
// mean the same configuration have the same canonical form.
func Normalize(raw json.RawMessage) (Config, error) {
	var in input
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Config{}, apperr.InvalidField("config", "must be an agent configuration object: "+decodeReason(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Config{}, apperr.InvalidField("config", "must be one JSON object")
	}
	var errs []apperr.Detail
	bad := func(field, reason string) {
		errs = append(errs, apperr.Detail{Field: "config." + field, Reason: reason})
	}

	out := Config{Model: in.Model, Skills: in.Skills, Memories: in.Memories, Subagents: in.Subagents}
	if in.Model == "" {
		bad("model", "is required: the key of a model of the workspace")
	}
	if in.Instructions != nil {
		out.Instructions = *in.Instructions
		if reason := textProblem(out.Instructions, MaxInstructions); reason != "" {
			bad("instructions", reason)
		}
	}
	if in.Tools != nil {
		out.Tools = Tools{Web: in.Tools.Web, Environment: in.Tools.Environment, Connections: in.Tools.Connections}
	}
	normalizeWeb(out.Tools.Web, bad)
	if e := out.Tools.Environment; e != nil && e.TemplateID == "" {
		bad("tools.environment.template_id", "is required")
	}
	normalizeConnections(&out.Tools, bad)
	out.Skills = nonNil(out.Skills)
	checkRefs(out.Skills, MaxSkills, "skills", "skill_id", func(r SkillRef) string { return r.SkillID }, bad)
	for i, s := range out.Skills {
		if s.RevisionID != nil && *s.RevisionID == "" {
			bad(fmt.Sprintf("skills[%d].revision_id", i), "must be a revision id or null")
		}
	}
	out.Memories = nonNil(out.Memories)
	checkRefs(out.Memories, MaxMemories, "memories", "memory_id", func(r MemoryRef) string { return r.MemoryID }, bad)
	out.Subagents = nonNil(out.Subagents)
	checkRefs(out.Subagents, MaxSubagents, "subagents", "agent_id", func(r SubagentRef) string { return r.AgentID }, bad)
	out.Limits = normalizeLimits(in.Limits, bad)
	out.Context = Context{Strategy: ContextSummarize}
	if in.Context != nil && in.Context.Strategy != nil {
		out.Context.Strategy = *in.Context.Strategy
		if out.Context.Strategy != ContextSummarize && out.Context.Strategy != ContextTruncate {
			bad("context.strategy", fmt.Sprintf("must be %s or %s", ContextSummarize, ContextTruncate))
		}
	}
	out.ToolPolicy = normalizeToolPolicy(in.ToolPolicy, bad)
	if len(errs) > 0 {
		return Config{}, apperr.InvalidArgument("the agent configuration is invalid", errs...)
	}
	return out, nil
}

func normalizeWeb(w *WebTools, bad func(string, string)) {
	if w == nil {
		return
	}
	if w.ProviderID == "" {
		bad("tools.web.provider_id", "is required")
	}
	if len(w.Operations) == 0 {
		bad("tools.web.operations", fmt.Sprintf("must name at least one operation (%s, %s)", catalog.OperationSearch, catalog.OperationFetch))
	}
	seen := map[string]bool{}
	for i, op := range w.Operations {
		switch {
		case op != string(catalog.OperationSearch) && op != string(catalog.OperationFetch):
			bad(fmt.Sprintf("tools.web.operations[%d]", i), fmt.Sprintf("must be %s or %s", catalog.OperationSearch, catalog.OperationFetch))
		case seen[op]:
			bad(fmt.Sprintf("tools.web.operations[%d]", i), "is listed twice")
		}
		seen[op] = true
	}
	slices.Sort(w.Operations)
}

func normalizeConnections(t *Tools, bad func(string, string)) {
	t.Connections = nonNil(t.Connections)
	checkRefs(t.Connections, MaxConnections, "tools.connections", "connection_id", func(c ConnectionTools) string { return c.ConnectionID }, bad)
	for i := range t.Connections {
		acts := t.Connections[i].Actions
		if acts == nil {
			continue
		}
		field := fmt.Sprintf("tools.connections[%d].actions", i)
		switch {
		case len(acts) == 0:
			bad(field, "must name at least one action, or be null to allow every action")
		case len(acts) > MaxActions:
			bad(field, fmt.Sprintf("at most %d actions", MaxActions))
		}
		seen := map[string]bool{}
		for j, a := range acts {
			switch {
			case !actionPattern.MatchString(a):
				bad(fmt.Sprintf("%s[%d]", field, j), "an action name is 1 to 128 of A-Z a-z 0-9 _ . : -, starting with a letter or digit")
			case seen[a]:
				bad(fmt.Sprintf("%s[%d]", field, j), "is listed twice")
			}
			seen[a] = true
		}
		slices.Sort(acts)
	}
}

func normalizeLimits(in *limitsInput, bad func(string, string)) Limits {
	out := Limits{MaxSteps: DefaultMaxSteps, MaxTokens: DefaultMaxTokens, TimeoutSeconds: DefaultTimeoutSeconds}
	if in == nil {
		return out
	}
	set := func(dst *int, v *int, field string, hi int) {
		if v == nil {
			return
		}
		if *v < 1 || *v > hi {
			bad("limits."+field, fmt.Sprintf("must be 1 to %d", hi))
		}
		*dst = *v
	}
	set(&out.MaxSteps, in.MaxSteps, "max_steps", MaxMaxSteps)
	set(&out.MaxTokens, in.MaxTokens, "max_tokens", MaxMaxTokens)
	set(&out.TimeoutSeconds, in.TimeoutSeconds, "timeout_seconds", MaxTimeoutSeconds)
	return out
}

// checkRefs bounds a list of references and refuses empty and repeated ids.
func checkRefs[T any](list []T, most int, field, idField string, idOf func(T) string, bad func(string, string)) {
	if len(list) > most {
		bad(field, fmt.Sprintf("at most %d", most))
	}
	seen := map[string]bool{}
	for i, r := range list {
		id := idOf(r)
		switch {
		case id == "":
			bad(fmt.Sprintf("%s[%d].%s", field, i, idField), "is required")
		case seen[id]:
			bad(fmt.Sprintf("%s[%d].%s", field, i, idField), "is listed twice")
		}
		seen[id] = true
	}
}

// textProblem says what is wrong with free text of at most most characters:
// invalid UTF-8, too long, or control characters other than line breaks and
// tabs (NUL included, which PostgreSQL cannot store). "" when nothing is.
func textProblem(s string, most int) string {
	switch {
	case !utf8.ValidString(s):
		return "must be UTF-8 text"
	case utf8.RuneCountInString(s) > most:
		return fmt.Sprintf("must be at most %d characters", most)
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' }) >= 0:
		return "must not contain control characters other than line breaks and tabs"
	}
	return ""
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// decodeReason describes a decoding error without echoing the input.
func decodeReason(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s must be %s", te.Field, te.Type)
	}
	return err.Error()
}
