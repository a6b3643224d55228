// Package refcheck checks the references that agent and skill configurations make
// to resources other domains own: environment templates, memories,
// connections and assets (skill packages). The agent and skill services call
// it on every publish, inside the publishing transaction, for each reference.
//
// Each check answers nil when the reference may be used, a 404 not_found
// apperr naming field when the resource is absent or in another workspace, a
// 409 disabled when it is disabled, and a 400 naming field (or a member under
// it) when it exists but does not fit (an action the connection's connector
// does not offer, an asset that is not a safe skill package: see skillpkg).
//
// Workspace is the implementation a process uses (wired in internal/app);
// None refuses every reference with the 404, for tests of the referring
// domains alone.
package refcheck

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/svcdev/svc/internal/apperr"
)

// External checks references to resources of other domains.
type External interface {
	// EnvironmentTemplate checks an environment template id (et_…).
	EnvironmentTemplate(ctx context.Context, tx pgx.Tx, workspaceID, templateID, field string) error
	// Memory checks a memory id (mem_…).
	Memory(ctx context.Context, tx pgx.Tx, workspaceID, memoryID, field string) error
	// Connection checks a connection id (con_…) and, when actions is not nil,
	// that its connector offers each of them; actionsField names the list
	// (its items are actionsField[i]).
	Connection(ctx context.Context, tx pgx.Tx, workspaceID, connectionID string, actions []string, field, actionsField string) error
	// SkillArchive checks, outside any transaction, that the asset id (as_…)
	// holds a skill package that passes skillpkg.Check. It reads the content,
	// which never changes, so no lock needs to be held meanwhile.
	SkillArchive(ctx context.Context, workspaceID, assetID, field string) error
	// SkillPackage checks, in tx, that the asset exists and is not retired,
	// and locks it so that it stays so until tx ends.
	SkillPackage(ctx context.Context, tx pgx.Tx, workspaceID, assetID, field string) error
}

// None refuses every reference, as if none of these resources existed; it
// serves callers that check no references.
type None struct{}

var _ External = None{}

// EnvironmentTemplate implements External.
func (None) EnvironmentTemplate(_ context.Context, _ pgx.Tx, _, _, field string) error {
	return NotFound(field, "no environment template with this id in the workspace")
}

// Memory implements External.
func (None) Memory(_ context.Context, _ pgx.Tx, _, _, field string) error {
	return NotFound(field, "no memory with this id in the workspace")
}

// Connection implements External.
func (None) Connection(_ context.Context, _ pgx.Tx, _, _ string, _ []string, field, _ string) error {
	return NotFound(field, "no connection with this id in the workspace")
}

// SkillArchive implements External.
func (None) SkillArchive(_ context.Context, _, _, field string) error {
	return NotFound(field, "no asset with this id in the workspace")
}

// SkillPackage implements External.
func (None) SkillPackage(_ context.Context, _ pgx.Tx, _, _, field string) error {
	return NotFound(field, "no asset with this id in the workspace")
}

// NotFound is the 404 of a reference to something absent or in another
// workspace, naming the field that held it. Every reference check uses it,
// so a client cannot tell another workspace's ids from absent ones.
func NotFound(field, reason string) error {
	return &apperr.Error{Kind: apperr.KindNotFound, Msg: "a referenced resource was not found",
		Details: []apperr.Detail{{Field: field, Reason: reason}}}
}

// Disabled is the 409 of a reference to something disabled.
func Disabled(field, reason string) error {
	return &apperr.Error{Kind: apperr.KindDisabled, Msg: "a referenced resource is disabled",
		Details: []apperr.Detail{{Field: field, Reason: reason}}}
}

// Conflict is the 409 of a reference to something whose state refuses new
// use, such as an archived skill or agent.
func Conflict(field, reason string) error {
	return &apperr.Error{Kind: apperr.KindConflict, Msg: "a referenced resource cannot be used",
		Details: []apperr.Detail{{Field: field, Reason: reason}}}
}
