package provider

import (
	"context"
	"errors"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/auth"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/provider/catalog"
	"github.com/svcdev/svc/internal/provider/probe"
)

// Test sends the provider test of a provider of kind k in the caller's
// workspace: one inexpensive probe with its stored configuration and secrets
// (docs/decisions/0016-provider-tests.md). It needs the run permission. A disabled provider is 409
// disabled; a type whose test is unsupported answers Unsupported without any
// call. A secret that cannot be opened (its key left the ring) is a failed
// result saying so, since resending the credential is the fix.
func (s *Service) Test(ctx context.Context, c *auth.Caller, k catalog.Kind, providerID string) (probe.Result, error) {
	if err := auth.Require(c, auth.PermRun); err != nil {
		return probe.Result{}, err
	}
	row, err := s.q.ProviderGet(ctx, s.pool, db.ProviderGetParams{WorkspaceID: c.WorkspaceID, Kind: string(k), ID: providerID})
	if err != nil {
		return probe.Result{}, dbx.Translate(err, "provider")
	}
	if !row.Enabled {
		return probe.Result{}, &apperr.Error{Kind: apperr.KindDisabled, Msg: "the provider is disabled; enable it to test it"}
	}
	t, ok := s.reg.Lookup(row.Type)
	if !ok || !t.TestSupported() {
		return probe.Result{Outcome: probe.Unsupported}, nil
	}
	target := probe.Target{Type: t}
	if target.Config, err = decodeConfig(row.Config); err != nil {
		return probe.Result{}, err
	}
	for _, secret := range []struct {
		sealed []byte
		out    any
	}{{row.Credential, &target.Credential}, {row.ExtraHeaders, &target.ExtraHeaders}} {
		if err := s.open(row.ID, secret.sealed, secret.out); err != nil {
			if errors.Is(err, ErrSecretUnreadable) {
				return probe.Result{Outcome: probe.Failed, Message: "a stored secret of the provider cannot be opened (its key is no longer in the key ring, or it was altered); set the credential again"}, nil
			}
			return probe.Result{}, err
		}
	}
	return s.prober.Probe(ctx, target), nil
}
