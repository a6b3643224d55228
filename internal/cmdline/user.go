package cmdline

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/svcdev/svc/internal/identity"
)

func userCommand(stdio IO) *cli.Command {
	return &cli.Command{
		Name:  "user",
		Usage: "disable or enable a user account",
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErr("user: unknown command %q", c.Args().First())
			}
			return usageErr("user: missing command (disable, enable)")
		},
		Subcommands: []*cli.Command{
			userStateCommand(stdio, "disable", true,
				"Refuses the account's API keys and sessions (401) until `svc user enable`; running processes\n"+
					"apply it within 2 seconds. Its keys, memberships and grants are kept as they are."),
			userStateCommand(stdio, "enable", false,
				"Gives a disabled account back its API keys, sessions and grants, unchanged."),
		},
	}
}

// userStateCommand is `user disable` or `user enable`; both print the account's
// state as JSON and succeed, changing nothing, when it already is in that state.
func userStateCommand(stdio IO, name string, disabled bool, description string) *cli.Command {
	return &cli.Command{
		Name:        name,
		Usage:       name + " the user account with an e-mail address",
		Description: description,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "email", Usage: "the account's e-mail `ADDRESS` (any case)"},
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			if !c.IsSet("email") {
				return usageErr("user %s: --email ADDRESS is required", name)
			}
			pool, err := openCheckedPool(c, stdio)
			if err != nil {
				return err
			}
			defer pool.Close()
			st, err := identity.SetUserDisabled(c.Context, pool, c.String("email"), disabled)
			if err != nil {
				return fmt.Errorf("user %s: %w", name, err)
			}
			if err := printJSON(stdio.Stdout, st); err != nil {
				return err
			}
			if !st.Changed {
				fmt.Fprintf(stdio.Stderr, "the account %s was already %sd; nothing changed\n", st.Email, name)
			}
			return nil
		},
	}
}
