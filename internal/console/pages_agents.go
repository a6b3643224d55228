package console

import (
	"github.com/svcdev/svc/internal/agent"
)

// agentRoutes are the Agents section: the pages of revisioned heads
// (pages_revisioned.go) over the agent service.
func (c *Console) agentRoutes() []route {
	return c.headRoutes(&headKind{
		Section: "agents", Param: "agent", Noun: "agent", Title: "Agents", Twin: "Agent",
		svc: func() headService {
			return revisioned[agent.Config]{Service: c.svc.Agents.Service, refs: agentReferences}
		},
		Example: `{
  "model": "main",
  "instructions": "You are a helpful assistant.",
  "limits": {"max_steps": 100}
}`,
		ConfigHelp: "The agent's configuration: model (the key of a model of the workspace, required), " +
			"instructions, tools (web, environment, connections), skills, memories, subagents and limits. " +
			"Members left out take their defaults.",
	})
}

// agentReferences are the heads of this console an agent configuration
// names: its skills and subagents.
func agentReferences(cfg agent.Config) []reference {
	var out []reference
	for _, s := range cfg.Skills {
		label := "Skill " + s.SkillID
		if s.RevisionID != nil {
			out = append(out, reference{Label: label + ", revision " + *s.RevisionID, Parts: []string{"skills", s.SkillID, "revisions", *s.RevisionID}})
			continue
		}
		out = append(out, reference{Label: label + ", its default revision", Parts: []string{"skills", s.SkillID}})
	}
	for _, a := range cfg.Subagents {
		out = append(out, reference{Label: "Subagent " + a.AgentID, Parts: []string{"agents", a.AgentID}})
	}
	return out
}
