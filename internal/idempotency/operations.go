package idempotency

import (
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Header is the request header that carries the client's key.
const Header = "Idempotency-Key"

// ReplayedHeader marks a replayed response.
const ReplayedHeader = "Idempotent-Replayed"

// operations is the set of operations that honour the header, as
// "METHOD /echo/route/:template" strings.
type operations map[string]bool

func opKey(method, route string) string { return method + " " + route }

// operationsOf collects the operations whose contract declares the header, at
// the path or the operation level, under Echo's route templates
// ({workspace_id} becomes :workspace_id), which is what c.Path() returns.
func operationsOf(doc *openapi3.T) operations {
	ops := operations{}
	if doc == nil || doc.Paths == nil {
		return ops
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if declares(item.Parameters) || declares(op.Parameters) {
				ops[opKey(method, echoRoute(path))] = true
			}
		}
	}
	return ops
}

func declares(params openapi3.Parameters) bool {
	for _, p := range params {
		if p != nil && p.Value != nil && p.Value.In == openapi3.ParameterInHeader && strings.EqualFold(p.Value.Name, Header) {
			return true
		}
	}
	return false
}

// echoRoute turns an OpenAPI path template into Echo's form.
func echoRoute(path string) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(path, '{')
		if open < 0 {
			break
		}
		end := strings.IndexByte(path[open:], '}')
		if end < 0 {
			break
		}
		b.WriteString(path[:open])
		b.WriteByte(':')
		b.WriteString(path[open+1 : open+end])
		path = path[open+end+1:]
	}
	b.WriteString(path)
	return b.String()
}
