package cmdline

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/svcdev/svc/internal/app"
	"github.com/svcdev/svc/internal/dbx"
	schema "github.com/svcdev/svc/sql"
)

type migrateOutput struct {
	SchemaVersion   int64   `json:"schema_version"`
	DatabaseVersion int64   `json:"database_version"`
	Applied         []int64 `json:"applied"`
	Match           bool    `json:"match"`
}

func migrateCommand(stdio IO) *cli.Command {
	return &cli.Command{
		Name:  "migrate",
		Usage: "upgrade the database schema to this build's version",
		Description: "Holds a PostgreSQL advisory lock while migrating, so concurrent runs migrate once.\n" +
			"With --check, changes nothing: exit 0 when the schema matches this build, 1 otherwise.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "check", Usage: "verify that the schema matches this build without changing it"},
		},
		Action: func(c *cli.Context) error {
			if err := noArgs(c); err != nil {
				return err
			}
			cfg, err := loadConfig(c, stdio)
			if err != nil {
				return err
			}
			log := app.NewLogger(cfg.Log, stdio.Stderr)
			pool, err := dbx.NewPool(c.Context, cfg.Database.URL, dbx.PoolOptions{MaxConns: 2, ConnectTimeout: cfg.Database.ConnectTimeout})
			if err != nil {
				return err
			}
			defer pool.Close()
			if err := dbx.Ping(c.Context, pool, cfg.Database.ConnectTimeout); err != nil {
				return err
			}

			out := migrateOutput{SchemaVersion: schema.Version(), Applied: []int64{}}
			if !c.Bool("check") {
				res, err := dbx.Migrate(c.Context, pool, cfg.Database.MigrationAdvisoryLockTimeout, log)
				if err != nil {
					return err
				}
				if res.Applied != nil {
					out.Applied = res.Applied
				}
			}
			state, err := dbx.ReadSchema(c.Context, pool)
			if err != nil {
				return err
			}
			out.DatabaseVersion = state.Newest()
			checkErr := dbx.CheckSchema(c.Context, pool, false)
			out.Match = checkErr == nil
			if err := printJSON(stdio.Stdout, out); err != nil {
				return err
			}
			if checkErr != nil {
				return checkErr
			}
			if len(out.Applied) > 0 {
				fmt.Fprintf(stdio.Stderr, "migrated the database to schema version %d\n", out.DatabaseVersion)
			}
			return nil
		},
	}
}
