package cmdline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/svcdev/svc/internal/keyring"
	"github.com/svcdev/svc/internal/rekey"
)

func keyringCommand(stdio IO) *cli.Command {
	return &cli.Command{
		Name:  "keyring",
		Usage: "manage the encryption key ring",
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErr("keyring: unknown command %q", c.Args().First())
			}
			return usageErr("keyring: missing command (generate, add, promote, list, reseal)")
		},
		Subcommands: []*cli.Command{{
			Name:  "generate",
			Usage: "write a new key ring with one primary 256-bit key",
			Description: "Writes FILE with mode 0600 and refuses to overwrite an existing file. Missing parent\n" +
				"directories are created with mode 0700, readable only by the user running the command. With\n" +
				"--if-missing, an existing FILE is left as it is once it loads as a key ring, and reported the\n" +
				"same way (for a container that makes the ring on first start).",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "out", Usage: "write the key ring to `FILE`"},
				&cli.BoolFlag{Name: "if-missing", Usage: "keep an existing FILE that is a valid key ring, and succeed"},
			},
			Action: func(c *cli.Context) error {
				if err := noArgs(c); err != nil {
					return err
				}
				out := c.String("out")
				if out == "" {
					return usageErr("keyring generate: --out FILE is required")
				}
				if err := makeParents(stdio, out); err != nil {
					return err
				}
				if err := keyring.Generate(out); err != nil {
					if !c.Bool("if-missing") || !errors.Is(err, fs.ErrExist) {
						return err
					}
					fmt.Fprintf(stdio.Stderr, "svc: keyring generate: %s exists; kept as it is\n", out)
				}
				ring, err := keyring.Load(out)
				if err != nil {
					return err
				}
				return printJSON(stdio.Stdout, map[string]string{"key_file": out, "primary_key_id": ring.PrimaryID()})
			},
		}, {
			Name:  "add",
			Usage: "add a new 256-bit key to the key ring, not primary (rotation step 1)",
			Description: "Appends a new key to FILE (default: the configured encryption.key_file), leaving the\n" +
				"primary as it is, and replaces the file atomically with mode 0600. Every process must load\n" +
				"the new ring (restart) before the key is promoted.",
			Flags: []cli.Flag{fileFlag()},
			Action: func(c *cli.Context) error {
				path, err := ringFile(c, stdio, "add")
				if err != nil {
					return err
				}
				id, err := keyring.AddKey(path)
				if err != nil {
					return err
				}
				ring, err := keyring.Load(path)
				if err != nil {
					return err
				}
				return printJSON(stdio.Stdout, map[string]string{"key_file": path, "key_id": id, "primary_key_id": ring.PrimaryID()})
			},
		}, {
			Name:  "promote",
			Usage: "make a key of the key ring primary (rotation step 2)",
			Description: "Marks key ID primary in FILE (default: the configured encryption.key_file) and every\n" +
				"other key not primary, replacing the file atomically with mode 0600.",
			Flags: []cli.Flag{fileFlag(), &cli.StringFlag{Name: "key-id", Usage: "the `ID` of the key to make primary"}},
			Action: func(c *cli.Context) error {
				path, err := ringFile(c, stdio, "promote")
				if err != nil {
					return err
				}
				id := c.String("key-id")
				if id == "" {
					return usageErr("keyring promote: --key-id ID is required")
				}
				if err := keyring.Promote(path, id); err != nil {
					return err
				}
				ring, err := keyring.Load(path)
				if err != nil {
					return err
				}
				return printJSON(stdio.Stdout, map[string]string{"key_file": path, "primary_key_id": ring.PrimaryID()})
			},
		}, {
			Name:        "list",
			Usage:       "list the keys of the key ring, without their secrets",
			Description: "Prints the keys of FILE (default: the configured encryption.key_file) as a JSON list of\n{id, primary, created_at}.",
			Flags:       []cli.Flag{fileFlag()},
			Action: func(c *cli.Context) error {
				path, err := ringFile(c, stdio, "list")
				if err != nil {
					return err
				}
				keys, err := keyring.List(path)
				if err != nil {
					return err
				}
				return printJSON(stdio.Stdout, keys)
			},
		}, {
			Name:  "reseal",
			Usage: "re-seal every stored secret under the primary key (rotation step 3)",
			Description: "Re-seals provider credentials and extra headers, outbox secrets and stored idempotent\n" +
				"responses that are not sealed under the configured key ring's primary key, in short\n" +
				"transactions of N rows. A value that cannot be opened (its key is not in the ring) is left as\n" +
				"it is and reported on stderr; the command then exits 1. Prints the counts as JSON.",
			Flags: []cli.Flag{&cli.IntFlag{Name: "batch", Value: rekey.DefaultBatch, Usage: "re-seal at most `N` rows per transaction"}},
			Action: func(c *cli.Context) error {
				if err := noArgs(c); err != nil {
					return err
				}
				batch := c.Int("batch")
				if batch < 1 {
					return usageErr("keyring reseal: --batch must be at least 1")
				}
				cfg, err := loadConfig(c, stdio)
				if err != nil {
					return err
				}
				if cfg.Encryption.KeyFile == "" {
					return errors.New("keyring reseal: no key ring configured (encryption.key_file)")
				}
				ring, err := keyring.Load(cfg.Encryption.KeyFile)
				if err != nil {
					return err
				}
				pool, err := openCheckedPool(c, stdio)
				if err != nil {
					return err
				}
				defer pool.Close()
				res, runErr := rekey.Run(c.Context, pool, ring, batch)
				for _, u := range res.Unreadable {
					fmt.Fprintf(stdio.Stderr, "unreadable %s %s: %s\n", u.Column, u.ID, u.Reason)
				}
				if err := printJSON(stdio.Stdout, struct {
					Resealed   map[string]int `json:"resealed"`
					Unreadable int            `json:"unreadable"`
				}{res.Resealed, len(res.Unreadable)}); err != nil {
					return err
				}
				if runErr != nil {
					return fmt.Errorf("keyring reseal: %w", runErr)
				}
				if n := len(res.Unreadable); n > 0 {
					return fmt.Errorf("keyring reseal: %d value(s) could not be opened with the key ring and were left as they are; "+
						"restore the missing key(s) to the ring and run reseal again", n)
				}
				return nil
			},
		}},
	}
}

func fileFlag() cli.Flag {
	return &cli.StringFlag{Name: "file", Usage: "the key ring `FILE` (default: the configured encryption.key_file)"}
}

// ringFile returns the key ring file a file-editing subcommand works on: --file,
// else the configured encryption.key_file.
func ringFile(c *cli.Context, stdio IO, name string) (string, error) {
	if err := noArgs(c); err != nil {
		return "", err
	}
	if path := c.String("file"); path != "" {
		return path, nil
	}
	cfg, err := loadConfig(c, stdio)
	if err != nil {
		return "", err
	}
	if cfg.Encryption.KeyFile == "" {
		return "", usageErr("keyring %s: --file FILE is required when no encryption.key_file is configured", name)
	}
	return cfg.Encryption.KeyFile, nil
}

// makeParents creates the missing parent directories of file with mode 0700
// (whatever the umask) and says so on stderr; existing ones are left as they
// are.
func makeParents(stdio IO, file string) error {
	var missing []string
	for dir := filepath.Dir(file); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break // there, or keyring.Generate reports why it is not usable
		}
		missing = append(missing, dir)
		if dir == filepath.Dir(dir) {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		dir := missing[i]
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("keyring generate: create the directory %s: %w", dir, err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("keyring generate: %w", err)
		}
		fmt.Fprintf(stdio.Stderr, "created the directory %s (mode 0700)\n", dir)
	}
	return nil
}
