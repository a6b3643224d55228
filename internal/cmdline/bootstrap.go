package cmdline

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/svcdev/svc/gen/db"
	"github.com/svcdev/svc/internal/apperr"
	"github.com/svcdev/svc/internal/dbx"
	"github.com/svcdev/svc/internal/identity"
	"github.com/svcdev/svc/internal/password"
)

// ExitAlreadyInitialized is bootstrap's exit code when an organization exists.
const ExitAlreadyInitialized = 3

func bootstrapCommand(stdio IO) *cli.Command {
	return &cli.Command{
		Name:  "bootstrap",
		Usage: "create the first organization, workspace and administrator",
		Description: "Creates the first organization, workspace and administrator (organization owner and\n" +
			"workspace admin) with a first admin API key, in one transaction, and prints their ids and\n" +
			"the key as JSON; the key is shown only here. The password (at least 8 characters) is asked\n" +
			"twice on the terminal, or read from the first line of standard input with --password-stdin.\n" +
			"Exit 3, changing nothing, when the service is already initialized; exit 1 on invalid input.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "email", Usage: "the administrator's e-mail `ADDRESS`"},
			&cli.BoolFlag{Name: "password-stdin", Usage: "read the password from the first line of standard input"},
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			email := c.String("email")
			if !c.IsSet("email") {
				return usageErr("bootstrap: --email ADDRESS is required")
			}
			if err := identity.ValidateEmail(email); err != nil {
				return fmt.Errorf("bootstrap: --email %q is not a valid e-mail address", email)
			}
			pool, err := openCheckedPool(c, stdio)
			if err != nil {
				return err
			}
			defer pool.Close()
			// Answer "already initialized" before asking for a password that would
			// not be used; Bootstrap checks again under its lock.
			exists, err := db.New().OrganizationAnyExists(c.Context, pool)
			if err != nil {
				return fmt.Errorf("read the database: %w", err)
			}
			if exists {
				return &exitError{code: ExitAlreadyInitialized, err: identity.ErrAlreadyInitialized}
			}
			pw, err := readPassword(stdio, c.Bool("password-stdin"))
			if err != nil {
				return err
			}
			res, err := identity.Bootstrap(c.Context, pool, identity.BootstrapInput{Email: email, Password: pw})
			switch {
			case errors.Is(err, identity.ErrAlreadyInitialized):
				return &exitError{code: ExitAlreadyInitialized, err: err}
			case err != nil:
				return describe("bootstrap", err)
			}
			if err := printJSON(stdio.Stdout, res); err != nil {
				return err
			}
			fmt.Fprintln(stdio.Stderr, "svc is initialized; the API key above is shown only once: keep it safe")
			return nil
		},
	}
}

// openCheckedPool connects to the configured database and refuses one whose
// schema is not exactly this binary's: operator commands never write to a
// database an older or newer build owns.
func openCheckedPool(c *cli.Context, stdio IO) (*pgxpool.Pool, error) {
	cfg, err := loadConfig(c, stdio)
	if err != nil {
		return nil, err
	}
	pool, err := dbx.NewPool(c.Context, cfg.Database.URL, dbx.PoolOptions{MaxConns: 2, ConnectTimeout: cfg.Database.ConnectTimeout})
	if err != nil {
		return nil, err
	}
	if err := dbx.Ping(c.Context, pool, cfg.Database.ConnectTimeout); err != nil {
		pool.Close()
		return nil, err
	}
	if err := dbx.CheckSchema(c.Context, pool, false); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// readPassword reads the new password: the first line of standard input with
// fromStdin, else twice from the terminal without echo.
func readPassword(stdio IO, fromStdin bool) (string, error) {
	if fromStdin {
		return firstLine(stdio.Stdin)
	}
	f, ok := stdio.Stdin.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return "", errors.New("bootstrap: standard input is not a terminal, so the password cannot be asked: pass --password-stdin and write the password on standard input")
	}
	fd := int(f.Fd())
	ask := func(prompt string) (string, error) {
		fmt.Fprint(stdio.Stderr, prompt)
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(stdio.Stderr)
		if err != nil {
			return "", fmt.Errorf("bootstrap: read the password: %w", err)
		}
		return string(b), nil
	}
	pw, err := ask("Password (at least 8 characters): ")
	if err != nil {
		return "", err
	}
	if err := password.Validate(pw); err != nil {
		return "", fmt.Errorf("bootstrap: %w", err)
	}
	again, err := ask("Repeat the password: ")
	if err != nil {
		return "", err
	}
	if again != pw {
		return "", errors.New("bootstrap: the passwords differ; nothing was changed")
	}
	return pw, nil
}

// firstLine reads the first line of r without its line ending. Input beyond the
// longest password allowed is refused rather than cut.
func firstLine(r io.Reader) (string, error) {
	br := bufio.NewReader(io.LimitReader(r, password.MaxLength+3))
	line, err := br.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("bootstrap: read the password from standard input: %w", err)
	}
	if line == "" {
		return "", errors.New("bootstrap: no password on standard input (--password-stdin reads its first line)")
	}
	if !strings.HasSuffix(line, "\n") && len(line) > password.MaxLength {
		return "", fmt.Errorf("bootstrap: the password must have at most %d characters", password.MaxLength)
	}
	line = strings.TrimSuffix(line, "\n")
	line = strings.TrimSuffix(line, "\r")
	return line, nil
}

// describe turns a refused input of command cmd into a message naming the
// field.
func describe(cmd string, err error) error {
	ae, ok := apperr.As(err)
	if !ok || ae.Kind != apperr.KindInvalidArgument || len(ae.Details) == 0 {
		return err
	}
	d := ae.Details[0]
	return fmt.Errorf("%s: invalid %s: %s", cmd, d.Field, d.Reason)
}
