// Package skill manages skills: revisioned heads (sk_…) whose revisions hold
// a skill configuration (Config): instructions, an optional package of files
// (an asset holding a zip or tar archive, see skillpkg) and free metadata.
// The head and revision machinery is package revision's
// (docs/decisions/0020-agents-and-skills.md).
package skill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/refcheck"
	"github.com/svcdev/svc/internal/revision"
)

// Config is a skill's configuration as stored in a revision (normalized).
type Config struct {
	// Instructions tell an agent what the skill is for and how to use it.
	Instructions string `json:"instructions"`
	// Package is the asset holding the skill's files, nil for none.
	Package *Package `json:"package"`
	// Metadata is free JSON for the skill's authors and tools; {} when none.
	Metadata map[string]any `json:"metadata"`
}

// Package names the asset holding a skill's files.
type Package struct {
	AssetID string `json:"asset_id"`
}

// Bounds of a configuration.
const (
	MaxInstructions  = 65536 // characters
	MaxMetadataBytes = 16384 // canonical JSON
	MaxMetadataDepth = 8
)

// Revision is a revision of a skill.
type Revision = revision.Revision[Config]

// Service manages the skills of the caller's workspace.
type Service struct {
	*revision.Service[Config]
}

// NewService returns the skill service over pool; packages are checked by ext.
func NewService(pool *pgxpool.Pool, ext refcheck.External) *Service {
	return &Service{Service: revision.NewService[Config](pool, revision.KindSkill, content{ext: ext})}
}

type content struct{ ext refcheck.External }

// Normalize implements revision.Content.
func (content) Normalize(raw json.RawMessage) (Config, error) { return Normalize(raw) }

// CheckReferences implements revision.Content: the package asset, if any.
func (c content) CheckReferences(ctx context.Context, tx pgx.Tx, caller *auth.Caller, _ string, cfg Config) error {
	if cfg.Package == nil {
		return nil
	}
	return c.ext.SkillPackage(ctx, tx, caller.WorkspaceID, cfg.Package.AssetID, "config.package.asset_id")
}

// Precheck implements revision.Content: the package's archive is read and
// checked before the transaction (asset content never changes).
func (c content) Precheck(ctx context.Context, caller *auth.Caller, cfg Config) error {
	if cfg.Package == nil {
		return nil
	}
	return c.ext.SkillArchive(ctx, caller.WorkspaceID, cfg.Package.AssetID, "config.package.asset_id")
}

// Normalize decodes and validates a skill configuration without the
// database; metadata left out or null becomes {}.
func Normalize(raw json.RawMessage) (Config, error) {
	var in Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Config{}, apperr.InvalidField("config", "must be a skill configuration object: "+err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Config{}, apperr.InvalidField("config", "must be one JSON object")
	}
	var errs []apperr.Detail
	bad := func(field, reason string) {
		errs = append(errs, apperr.Detail{Field: "config." + field, Reason: reason})
	}
	switch s := in.Instructions; {
	case strings.TrimSpace(s) == "":
		bad("instructions", "is required")
	case !utf8.ValidString(s):
		bad("instructions", "must be UTF-8 text")
	case utf8.RuneCountInString(s) > MaxInstructions:
		bad("instructions", fmt.Sprintf("must be at most %d characters", MaxInstructions))
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\r' && r != '\t' }) >= 0:
		bad("instructions", "must not contain control characters other than line breaks and tabs")
	}
	if in.Package != nil && in.Package.AssetID == "" {
		bad("package.asset_id", "is required")
	}
	if in.Metadata == nil {
		in.Metadata = map[string]any{}
	}
	if reason := metadataProblem(in.Metadata); reason != "" {
		bad("metadata", reason)
	}
	if len(errs) > 0 {
		return Config{}, apperr.InvalidArgument("the skill configuration is invalid", errs...)
	}
	return in, nil
}

// metadataProblem bounds metadata: its canonical JSON size, its nesting, and
// text PostgreSQL can store (no NUL anywhere, keys included).
func metadataProblem(m map[string]any) string {
	canonical, err := revision.Canonical(m)
	if err != nil {
		return "must be a JSON object"
	}
	if len(canonical) > MaxMetadataBytes {
		return fmt.Sprintf("must encode to at most %d bytes", MaxMetadataBytes)
	}
	if depth(m) > MaxMetadataDepth {
		return fmt.Sprintf("must nest at most %d levels", MaxMetadataDepth)
	}
	if bytes.Contains(canonical, []byte(`\u0000`)) {
		return "must not contain NUL characters"
	}
	return ""
}

func depth(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}
