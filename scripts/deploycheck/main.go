// Command deploycheck validates svc's deployment artifacts without a container
// engine or a cluster: the Kubernetes manifests the Helm chart renders, the
// Compose file, the Dockerfile and its build context, and the binary the
// Dockerfile builds. scripts/check-deploy.sh runs it; it is a module of its own
// so that its dependencies (Helm, the Kubernetes API types, compose-go,
// BuildKit's Dockerfile parser) stay out of the service's module graph.
//
//	deploycheck manifests [-external NAME]... [-config-out FILE] < rendered.yaml
//	deploycheck compose [-env-of SERVICE] FILE
//	deploycheck dockerfile FILE
//	deploycheck context -root DIR -out DIR
//	deploycheck static FILE
//
// Every subcommand exits 1 with one line per problem on stderr, and 2 on a
// usage error.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "manifests":
		err = runManifests(args)
	case "compose":
		err = runCompose(args)
	case "dockerfile":
		err = runDockerfile(args)
	case "context":
		err = runContext(args)
	case "static":
		err = runStatic(args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "deploycheck %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: deploycheck manifests|compose|dockerfile|context|static ...")
	os.Exit(2)
}

// problems collects what a check found, one line each.
type problems []string

func (p *problems) add(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

// err reports every problem, or nil when there is none.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	for _, line := range p {
		fmt.Fprintln(os.Stderr, "  "+line)
	}
	return fmt.Errorf("%d problem(s)", len(p))
}
