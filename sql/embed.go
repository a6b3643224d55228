// Package schema embeds the database migrations, so that the binary migrates and
// checks its own schema and tests clone databases from the same files.
package schema

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var files embed.FS

// Migrations is the goose migration folder: one NNNNN_name.sql file per version.
var Migrations = mustSub(files, "migrations")

// versions lists the embedded migration versions in ascending order.
var versions = mustVersions(Migrations)

// Version is the schema version this binary expects: its highest migration.
func Version() int64 { return versions[len(versions)-1] }

// Versions returns every embedded migration version in ascending order.
func Versions() []int64 { return slices.Clone(versions) }

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

func mustVersions(fsys fs.FS) []int64 {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		panic(err)
	}
	var out []int64
	for _, name := range names {
		prefix, _, ok := strings.Cut(path.Base(name), "_")
		v, err := strconv.ParseInt(prefix, 10, 64)
		if !ok || err != nil || v <= 0 {
			panic(fmt.Sprintf("migration %q: name must start with a positive version and '_'", name))
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		panic("no migrations embedded")
	}
	slices.Sort(out)
	return out
}
