package skill

import (
	"context"
	"fmt"
	"strings"

	"github.com/svcdev/svc/internal/revision"
)

// Pinned is a skill revision a run pinned, with the skill's name.
type Pinned = revision.Pinned[Config]

// Instructions is the skills' part of a run's system prompt: for each skill
// revision of pins, in order, a "## Skill: <name>" heading and the
// revision's instructions, separated by blank lines; "" for none.
func (s *Service) Instructions(ctx context.Context, workspaceID string, pins []revision.Pin) (string, error) {
	skills, err := s.Pinned(ctx, workspaceID, pins)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i, sk := range skills {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "## Skill: %s\n\n%s", sk.Name, sk.Config.Instructions)
	}
	return b.String(), nil
}
