// Package cmdline is svc's command line: global flags, the commands, and the
// mapping of their outcomes to exit codes (0 success, 1 failure or invalid input,
// 2 usage error; bootstrap and organization create add 3, for what exists
// already). Messages go to stderr; machine output (JSON)
// goes to stdout.
package cmdline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/svcdev/svc/internal/buildinfo"
	"github.com/svcdev/svc/internal/config"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// exitError carries an exit code with the message to print.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// IO is where a command reads and writes.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Environ        []string
}

// Run runs the command line args (args[0] is the program name) and returns the
// process's exit code.
func Run(ctx context.Context, args []string, stdio IO) int {
	app := newApp(stdio)
	err := app.RunContext(ctx, args)
	if err == nil {
		return ExitOK
	}
	code := ExitFailure
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintf(stdio.Stderr, "svc: %s\n", err)
	if code == ExitUsage {
		fmt.Fprintln(stdio.Stderr, "Run 'svc --help' for usage.")
	}
	return code
}

func newApp(stdio IO) *cli.App {
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintln(c.App.Writer, buildinfo.String()) }
	app := &cli.App{
		Name:      "svc",
		Usage:     "configure and run AI agents for many workspaces",
		Version:   buildinfo.Version,
		Reader:    stdio.Stdin,
		Writer:    stdio.Stdout,
		ErrWriter: stdio.Stderr,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "read configuration from `FILE` (TOML); SVC_SECTION__KEY variables override it"},
		},
		Commands: []*cli.Command{
			runCommand(stdio),
			migrateCommand(stdio),
			keyringCommand(stdio),
			bootstrapCommand(stdio),
			userCommand(stdio),
			organizationCommand(stdio),
		},
		// Errors and exit codes are handled by Run, not by os.Exit inside the library.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return &exitError{code: ExitUsage, err: err}
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErr("unknown command %q", c.Args().First())
			}
			return usageErr("no command given (run, migrate, keyring, bootstrap, user, organization)")
		},
	}
	for _, cmd := range app.Commands {
		setUsageErrors(cmd)
	}
	return app
}

// setUsageErrors makes flag errors of a command and its subcommands exit 2.
func setUsageErrors(cmd *cli.Command) {
	cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		return &exitError{code: ExitUsage, err: err}
	}
	for _, sub := range cmd.Subcommands {
		setUsageErrors(sub)
	}
}

// noArgs refuses positional arguments for commands that take none.
func noArgs(c *cli.Context) error {
	if c.Args().Present() {
		return usageErr("%s: unexpected argument %q", strings.TrimPrefix(c.Command.HelpName, "svc "), c.Args().First())
	}
	return nil
}

// loadConfig reads the configuration named by the global --config flag.
func loadConfig(c *cli.Context, stdio IO) (*config.Config, error) {
	path := c.String("config")
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("config file %s: %w", path, errors.Unwrap(err))
		}
	}
	return config.Load(path, stdio.Environ)
}

// printJSON writes v as one line of JSON on stdout.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	return enc.Encode(v)
}
