package cmdline

import (
	"github.com/urfave/cli/v2"

	"github.com/svcdev/svc/internal/app"
)

func runCommand(stdio IO) *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run a process of the service",
		Description: "Roles: all (default) serves the API and runs everything; control serves the API and the\n" +
			"maintenance sweeps; worker executes runs and serves only /healthz and /readyz.\n" +
			"Refuses to start against a database whose schema does not match this build.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "role", Value: string(app.RoleAll), Usage: "process role: all, control or worker"},
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			role, err := app.ParseRole(c.String("role"))
			if err != nil {
				return usageErr("%v", err)
			}
			cfg, err := loadConfig(c, stdio)
			if err != nil {
				return err
			}
			log := app.NewLogger(cfg.Log, stdio.Stderr)
			return app.Run(c.Context, cfg, role, log)
		},
	}
}
