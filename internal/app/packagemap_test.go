package app_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// mapRow is a row of the package map whose first cell names a package under
// internal/, and only that.
var mapRow = regexp.MustCompile("^\\| `(internal/[a-z0-9/]+)` \\|")

// TestPackageMapNamesEveryPackage keeps the package map of
// docs/architecture.md true to the tree (decision 0048): every package under
// internal/ has exactly one row of its own, and every row names a package
// that exists.
func TestPackageMapNamesEveryPackage(t *testing.T) {
	t.Parallel()

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n## Packages\n")
	require.True(t, ok, "docs/architecture.md has a Packages section")
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var listed []string
	for line := range strings.SplitSeq(section, "\n") {
		if !strings.HasPrefix(line, "| `internal/") {
			continue
		}
		m := mapRow.FindStringSubmatch(line)
		require.NotNil(t, m, "a row of the package map names one package: %s", line)
		listed = append(listed, m[1])
	}

	var tree []string
	err = filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		dir := "internal/" + filepath.ToSlash(filepath.Dir(strings.TrimPrefix(p, ".."+string(filepath.Separator))))
		if !slices.Contains(tree, dir) {
			tree = append(tree, dir)
		}
		return nil
	})
	require.NoError(t, err)

	slices.Sort(tree)
	dup := slices.Clone(listed)
	slices.Sort(dup)
	require.Equal(t, slices.Compact(slices.Clone(dup)), dup, "each package has one row")
	require.Equal(t, tree, dup, "docs/architecture.md's package map lists exactly the packages under internal/")
}
