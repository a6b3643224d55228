// Package buildinfo carries the build's version, set at link time:
//
//	go build -ldflags "-X github.com/svcdev/svc/internal/buildinfo.Version=v1.2.3" ./cmd/svc
package buildinfo

import (
	"fmt"
	"runtime"

	schema "github.com/svcdev/svc/sql"
)

// Version is the build version; "dev" when not set at link time.
var Version = "dev"

// String describes the build: its version, the schema version it expects and the Go release.
func String() string {
	return fmt.Sprintf("svc %s (schema %d, %s)", Version, schema.Version(), runtime.Version())
}
