package app_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// serviceConstructors are the constructors of services a process shares, by
// package under internal/: the toolsets and the worker among them. Every
// package's NewService is one too.
var serviceConstructors = map[string][]string{
	"auth":             {"NewAuthenticator"},
	"connection":       {"NewVendors"},
	"endpoint":         {"NewPolicy"},
	"environment":      {"NewRuntime"},
	"provider/probe":   {"New"},
	"ratelimit":        {"New", "NewClients"},
	"stream":           {"NewHub", "NewPublisher"},
	"tool/connection":  {"New"},
	"tool/environment": {"New"},
	"tool/memory":      {"New"},
	"tool/subagent":    {"New"},
	"tool/web":         {"New"},
	"worker":           {"New", "NewExecutor"},
}

// TestOnlyAppBuildsServices keeps internal/app the one place where services
// are built (docs/decisions/0045-composition-root.md): no other production
// code outside the command line calls their constructors. revision.NewService
// is exempt: it is the generic machinery the agent and skill services are
// made of, not a service of its own.
func TestOnlyAppBuildsServices(t *testing.T) {
	t.Parallel()

	const internal = "github.com/svcdev/svc/internal/"
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, ".."+string(filepath.Separator)))
		if d.IsDir() {
			// The composition root, the command line, and test-only packages.
			if rel == "app" || rel == "cmdline" || rel == "testdb" || rel == "testfactory" || strings.HasSuffix(d.Name(), "test") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		imports := map[string]string{}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(ip, internal) {
				continue
			}
			name := path.Base(ip)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			imports[name] = strings.TrimPrefix(ip, internal)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fun := call.Fun
			if ix, ok := fun.(*ast.IndexExpr); ok { // a generic constructor
				fun = ix.X
			}
			sel, ok := fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			pkg, ok := imports[x.Name]
			if !ok {
				return true
			}
			name := sel.Sel.Name
			shared := name == "NewService" && pkg != "revision"
			for _, c := range serviceConstructors[pkg] {
				shared = shared || name == c
			}
			if shared {
				found = append(found, fset.Position(call.Pos()).String()+": "+pkg+"."+name)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, found, "services are built in internal/app only (services.go); hand them over instead")
}
