package cmdline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/invitation"
	"github.com/svcdev/svc/internal/keyring"
)

// ExitAlreadyExists is `organization create`'s exit code when an organization
// of the same name exists; like bootstrap's 3, nothing was changed.
const ExitAlreadyExists = 3

func organizationCommand(stdio IO) *cli.Command {
	return &cli.Command{
		Name:  "organization",
		Usage: "create and list organizations",
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErr("organization: unknown command %q", c.Args().First())
			}
			return usageErr("organization: missing command (create, list)")
		},
		Subcommands: []*cli.Command{organizationCreateCommand(stdio), organizationListCommand(stdio)},
	}
}

func organizationCreateCommand(stdio IO) *cli.Command {
	return &cli.Command{
		Name:  "create",
		Usage: "create an organization with its first workspace and its owner",
		Description: "Creates the organization NAME with a first workspace, in one transaction, and prints their ids\n" +
			"as JSON. When ADDRESS has an account, it becomes the organization's owner and the workspace's\n" +
			"admin at once. When it has none, the address is invited to own the organization: the\n" +
			"invitation's URL is printed (the only time it is shown), and its mail is queued for a control\n" +
			"process to send through the configured mail.transport; following the link makes the account.\n" +
			"Exit 3, changing nothing, when an organization of that name (whatever its case) exists; exit 1\n" +
			"on invalid input.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "the organization's `NAME` (1 to 200 characters)"},
			&cli.StringFlag{Name: "owner-email", Usage: "the owner's e-mail `ADDRESS`"},
			&cli.StringFlag{Name: "workspace", Value: identity.DefaultWorkspaceName, Usage: "the first workspace's `NAME`"},
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			for _, f := range []string{"name", "owner-email"} {
				if !c.IsSet(f) {
					return usageErr("organization create: --%s is required", f)
				}
			}
			in := identity.CreateOrganizationInput{Name: c.String("name"), WorkspaceName: c.String("workspace"), OwnerEmail: c.String("owner-email")}
			if err := in.Validate(); err != nil {
				return describe("organization create", err)
			}
			cfg, err := loadConfig(c, stdio)
			if err != nil {
				return err
			}
			pool, err := openCheckedPool(c, stdio)
			if err != nil {
				return err
			}
			defer pool.Close()
			invite, err := ownerInviter(cfg, pool)
			if err != nil {
				return err
			}
			res, err := identity.CreateOrganization(c.Context, pool, in, invite)
			switch {
			case errors.Is(err, identity.ErrOrganizationExists):
				return &exitError{code: ExitAlreadyExists, err: fmt.Errorf("organization create: %q: %w", strings.TrimSpace(in.Name), err)}
			case err != nil:
				return describe("organization create", err)
			}
			if err := printJSON(stdio.Stdout, res); err != nil {
				return err
			}
			switch {
			case res.Invitation != nil:
				fmt.Fprintf(stdio.Stderr, "organization %q is created. %s has no account: it is invited to own the organization until %s.\n"+
					"The invitation URL above is shown only here; its mail is queued, and a running control process sends it\n"+
					"through mail.transport %q. Following the link makes the account.\n",
					res.Name, res.Owner.Email, res.Invitation.ExpiresAt.Format(time.RFC3339), cfg.Mail.Transport)
			case res.Owner.Disabled:
				fmt.Fprintf(stdio.Stderr, "organization %q is created and owned by %s, whose account is disabled: run `svc user enable --email %s` to let it in\n",
					res.Name, res.Owner.Email, res.Owner.Email)
			default:
				fmt.Fprintf(stdio.Stderr, "organization %q is created; its owner %s signs in to the console with the account's password\n", res.Name, res.Owner.Email)
			}
			return nil
		},
	}
}

// ownerInviter is how `organization create` invites an owner with no account:
// through the invitation service, which seals the mail's link with the key
// ring. Without a key ring configured, it refuses, naming the key.
func ownerInviter(cfg *config.Config, pool *pgxpool.Pool) (identity.InviteOwnerFunc, error) {
	if cfg.Encryption.KeyFile == "" {
		return func(context.Context, pgx.Tx, identity.OwnerInvite) (identity.OwnerInvitation, error) {
			return identity.OwnerInvitation{}, errors.New("the owner has no account and would be invited, but no key ring is configured " +
				"(encryption.key_file) to seal the invitation mail's link")
		}, nil
	}
	ring, err := keyring.Load(cfg.Encryption.KeyFile)
	if err != nil {
		return nil, err
	}
	svc, err := invitation.NewService(invitation.Options{
		Pool: pool, Keyring: ring, PublicURL: cfg.Server.PublicURL,
		TTL:             time.Duration(cfg.Auth.InvitationTTLSeconds) * time.Second,
		ConfirmationTTL: time.Duration(cfg.Auth.InvitationConfirmationTTLSeconds) * time.Second,
	})
	if err != nil {
		return nil, err
	}
	return svc.InviteOwner, nil
}

func organizationListCommand(stdio IO) *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the organizations",
		Description: "Prints every organization, oldest first, as a table: its id, name, number of workspaces, owners\n" +
			"and the addresses invited to own it; with --json, as a JSON list of {id, name, workspaces, owners,\n" +
			"invited_owners, created_at}.",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table"}},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			pool, err := openCheckedPool(c, stdio)
			if err != nil {
				return err
			}
			defer pool.Close()
			orgs, err := identity.ListOrganizations(c.Context, pool)
			if err != nil {
				return fmt.Errorf("organization list: %w", err)
			}
			if c.Bool("json") {
				return printJSON(stdio.Stdout, orgs)
			}
			if len(orgs) == 0 {
				fmt.Fprintln(stdio.Stderr, "no organizations yet: `svc bootstrap` makes the first, `svc organization create` more")
				return nil
			}
			tw := tabwriter.NewWriter(stdio.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tWORKSPACES\tOWNERS\tCREATED")
			for _, o := range orgs {
				owners := append([]string{}, o.Owners...)
				for _, e := range o.InvitedOwners {
					owners = append(owners, e+" (invited)")
				}
				who := strings.Join(owners, ", ")
				if who == "" {
					who = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", o.ID, o.Name, o.Workspaces, who, o.CreatedAt.Format(time.DateOnly))
			}
			return tw.Flush()
		},
	}
}
