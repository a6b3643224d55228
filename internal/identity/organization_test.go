package identity_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/testdb"
)

// TestCreateOrganizationOncePerName: of concurrent creations of one name
// (whatever its case), exactly one wins; the others change nothing, and the
// winner's owner without an account is invited inside its transaction.
func TestCreateOrganizationOncePerName(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	invite := func(ctx context.Context, tx pgx.Tx, in identity.OwnerInvite) (identity.OwnerInvitation, error) {
		// The operator's principal exists in the same transaction.
		var kind, name string
		if err := tx.QueryRow(ctx, "SELECT kind, display_name FROM principal WHERE id = $1", in.InviterID).Scan(&kind, &name); err != nil {
			return identity.OwnerInvitation{}, err
		}
		if kind != "service" || name != identity.OperatorName || in.OrganizationName == "" {
			return identity.OwnerInvitation{}, fmt.Errorf("unexpected inviter %s %q of %q", kind, name, in.OrganizationName)
		}
		return identity.OwnerInvitation{ID: "inv_test", URL: "https://agents.example.com/invitations/accept?token=t", ExpiresAt: time.Now()}, nil
	}
	const n = 4
	results := make([]identity.CreatedOrganization, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "Acme"
			if i%2 == 1 {
				name = "ACME"
			}
			results[i], errs[i] = identity.CreateOrganization(t.Context(), pool, identity.CreateOrganizationInput{Name: name, OwnerEmail: "owner@acme.example"}, invite)
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		if err == nil {
			won++
			require.Equal(t, identity.OwnerInvited, results[i].Owner.Status)
			require.Equal(t, "inv_test", results[i].Invitation.ID)
		} else {
			require.True(t, errors.Is(err, identity.ErrOrganizationExists), "%v", err)
		}
	}
	require.Equal(t, 1, won)
	var orgs, workspaces, principals int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT (SELECT count(*) FROM organization), (SELECT count(*) FROM workspace), (SELECT count(*) FROM principal)").
		Scan(&orgs, &workspaces, &principals))
	require.Equal(t, []int{1, 1, 1}, []int{orgs, workspaces, principals})

	// A failing invitation rolls the whole organization back.
	_, err := identity.CreateOrganization(t.Context(), pool, identity.CreateOrganizationInput{Name: "Globex", OwnerEmail: "hank@globex.example"},
		func(context.Context, pgx.Tx, identity.OwnerInvite) (identity.OwnerInvitation, error) {
			return identity.OwnerInvitation{}, errors.New("no key ring")
		})
	require.ErrorContains(t, err, "invite the owner: no key ring")
	orgs2, err := identity.ListOrganizations(t.Context(), pool)
	require.NoError(t, err)
	require.Len(t, orgs2, 1)
	require.Contains(t, []string{"Acme", "ACME"}, orgs2[0].Name)
}
