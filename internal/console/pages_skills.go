package console

import (
	"github.com/svcdev/svc/internal/skill"
)

// skillRoutes are the Skills section: the pages of revisioned heads
// (pages_revisioned.go) over the skill service.
func (c *Console) skillRoutes() []route {
	return c.headRoutes(&headKind{
		Section: "skills", Param: "skill", Noun: "skill", Title: "Skills", Twin: "Skill",
		svc: func() headService {
			return revisioned[skill.Config]{Service: c.svc.Skills.Service, refs: skillReferences}
		},
		Example: `{
  "instructions": "Use this skill to ...",
  "package": null,
  "metadata": {}
}`,
		ConfigHelp: "The skill's configuration: instructions (required), package (an asset of the workspace " +
			`holding a zip or tar archive of the skill's files, as {"asset_id": "as_…"}, or null) and metadata (free JSON).`,
		Packages: true,
	})
}

// skillReferences is the package asset a skill configuration names.
func skillReferences(cfg skill.Config) []reference {
	if cfg.Package == nil {
		return nil
	}
	return []reference{{Label: "Package asset " + cfg.Package.AssetID, Parts: []string{"assets", cfg.Package.AssetID}}}
}
