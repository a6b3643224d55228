package httpapi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestServedContractIsTheWrittenOne: /api/v1/openapi.json serves
// openapi/openapi.yaml itself, converted to JSON: the same structure, the
// operation ids as written, no schema pruned, paths in the written order.
func TestServedContractIsTheWrittenOne(t *testing.T) {
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "openapi", "openapi.yaml")
	written, err := os.ReadFile(path)
	require.NoError(t, err)
	c, err := loadContract()
	require.NoError(t, err)

	// Same structure: the YAML decoded, passed through JSON to give numbers
	// the same type, equals the served JSON decoded.
	var fromYAML any
	require.NoError(t, yaml.Unmarshal(written, &fromYAML))
	asJSON, err := json.Marshal(fromYAML)
	require.NoError(t, err)
	var want, served any
	require.NoError(t, json.Unmarshal(asJSON, &want))
	require.NoError(t, json.Unmarshal(c.json, &served))
	require.Equal(t, want, served)

	// The parsed document the server validates with has the written
	// operation ids and every written schema.
	doc, err := openapi3.NewLoader().LoadFromFile(path)
	require.NoError(t, err)
	ids := func(d *openapi3.T) map[string]bool {
		out := map[string]bool{}
		for _, item := range d.Paths.Map() {
			for _, op := range item.Operations() {
				out[op.OperationID] = true
			}
		}
		return out
	}
	require.Equal(t, ids(doc), ids(c.doc))
	require.Contains(t, ids(c.doc), "getOpenAPIDocument")
	require.Len(t, c.doc.Components.Schemas, len(doc.Components.Schemas))
	for name := range doc.Components.Schemas {
		require.Contains(t, c.doc.Components.Schemas, name)
	}

	// Paths in the order they are written (JSON is YAML, so one parser
	// reads both).
	require.Equal(t, pathOrder(t, written), pathOrder(t, c.json))
}

func pathOrder(t *testing.T, src []byte) []string {
	t.Helper()
	var n yaml.Node
	require.NoError(t, yaml.Unmarshal(src, &n))
	root := n.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "paths" {
			var out []string
			for j, k := range root.Content[i+1].Content {
				if j%2 == 0 {
					out = append(out, k.Value)
				}
			}
			return out
		}
	}
	t.Fatal("no paths")
	return nil
}
