package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// defaultDrainSeconds is worker.drain_seconds when the environment leaves it.
const defaultDrainSeconds = 30

// runCompose loads a Compose file the way `docker compose` does (compose-go:
// the Compose specification's JSON schema, interpolation, the model's own
// consistency checks) and checks the rules of svc's laptop set-up:
//   - every image is built here or pinned to a version tag or digest;
//   - a dependency waited for as healthy has a health check, and one waited
//     for as completed is a one-shot (no restart policy);
//   - the build context has the Dockerfile;
//   - published ports listen on the loopback address only;
//   - a worker's stop_grace_period exceeds worker.drain_seconds plus 10 s, the
//     most a draining worker takes to stop.
//
// With -env-of SERVICE it prints that service's environment, KEY=VALUE a line,
// for scripts/check-deploy.sh to hand to svc's own configuration loader.
func runCompose(args []string) error {
	flags := flag.NewFlagSet("compose", flag.ContinueOnError)
	envOf := flags.String("env-of", "", "print the environment of `SERVICE`")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() != 1 {
		return errors.New("usage: deploycheck compose [-env-of SERVICE] FILE")
	}
	file, err := filepath.Abs(flags.Arg(0))
	if err != nil {
		return err
	}
	opts, err := cli.NewProjectOptions([]string{file},
		cli.WithWorkingDirectory(filepath.Dir(file)),
		cli.WithEnv([]string{}),
		cli.WithInterpolation(true),
		cli.WithResolvedPaths(true),
		cli.WithConsistency(true),
	)
	if err != nil {
		return err
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var p problems
	checkProject(&p, project)
	if err := p.err(); err != nil {
		return err
	}
	if *envOf != "" {
		svc, ok := project.Services[*envOf]
		if !ok {
			return fmt.Errorf("no service %q", *envOf)
		}
		keys := make([]string, 0, len(svc.Environment))
		for k := range svc.Environment {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if v := svc.Environment[k]; v != nil {
				fmt.Printf("%s=%s\n", k, *v)
			}
		}
		return nil
	}
	fmt.Printf("%s: project %s, %d services\n", file, project.Name, len(project.Services))
	return nil
}

func checkProject(p *problems, project *types.Project) {
	names := make([]string, 0, len(project.Services))
	for name := range project.Services {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		svc := project.Services[name]
		if svc.Build != nil {
			dockerfile := svc.Build.Dockerfile
			if dockerfile == "" {
				dockerfile = "Dockerfile"
			}
			if !filepath.IsAbs(dockerfile) {
				dockerfile = filepath.Join(svc.Build.Context, dockerfile)
			}
			if _, err := os.Stat(dockerfile); err != nil {
				p.add("service %s: build: %v", name, err)
			}
		} else if !pinned(svc.Image) {
			p.add("service %s: image %q is not pinned: name a version tag other than latest, or a digest", name, svc.Image)
		}
		for dep, cond := range svc.DependsOn {
			target, ok := project.Services[dep]
			if !ok {
				continue // the loader's consistency check reports it
			}
			switch cond.Condition {
			case types.ServiceConditionHealthy:
				if target.HealthCheck == nil || target.HealthCheck.Disable || len(target.HealthCheck.Test) == 0 {
					p.add("service %s waits for %s to be healthy, but %s has no health check", name, dep, dep)
				}
			case types.ServiceConditionCompletedSuccessfully:
				if target.Restart != "" && target.Restart != types.RestartPolicyNo {
					p.add("service %s waits for %s to complete, but %s restarts (%s)", name, dep, dep, target.Restart)
				}
			}
		}
		for _, port := range svc.Ports {
			if port.HostIP != "127.0.0.1" && port.HostIP != "::1" {
				p.add("service %s publishes port %d on %q: publish on 127.0.0.1 only", name, port.Target, port.HostIP)
			}
		}
		if slices.Contains(svc.Command, "worker") {
			checkWorkerGrace(p, name, svc)
		}
	}
}

func checkWorkerGrace(p *problems, name string, svc types.ServiceConfig) {
	drain := defaultDrainSeconds
	if v := svc.Environment["SVC_WORKER__DRAIN_SECONDS"]; v != nil {
		n, err := strconv.Atoi(*v)
		if err != nil {
			p.add("service %s: SVC_WORKER__DRAIN_SECONDS=%q is not a number", name, *v)
			return
		}
		drain = n
	}
	need := time.Duration(drain+10) * time.Second
	grace := 10 * time.Second // the engine's default
	if svc.StopGracePeriod != nil {
		grace = time.Duration(*svc.StopGracePeriod)
	}
	if grace <= need {
		p.add("service %s: stop_grace_period %s does not exceed worker.drain_seconds + 10 s (%s): the engine would kill a draining worker",
			name, strings.TrimSuffix(grace.String(), "0m0s"), need)
	}
}
