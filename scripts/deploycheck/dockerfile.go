package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

// runDockerfile parses a Dockerfile as BuildKit does, reports what BuildKit's
// own linter (`docker build --check`) reports while parsing, and checks the
// rules of svc's image:
//   - several stages, the last one the runtime image;
//   - every base image pinned: an explicit tag other than latest, or a digest
//     (an ARG in FROM is read with its default); scratch needs none;
//   - the final stage runs as a numeric, non-root USER (Kubernetes can check
//     runAsNonRoot only against a number);
//   - ENTRYPOINT and CMD in exec form, EXPOSE 8080;
//   - the binary is built with `make static` (what scripts/check-deploy.sh
//     builds and checks for static linking);
//   - no HEALTHCHECK on an image that has nothing to run it (scratch);
//   - no ADD from a URL, and COPY --from only from an earlier stage.
func runDockerfile(args []string) error {
	flags := flag.NewFlagSet("dockerfile", flag.ContinueOnError)
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() != 1 {
		return errors.New("usage: deploycheck dockerfile FILE")
	}
	path := flags.Arg(0)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var p problems
	for _, w := range res.Warnings {
		at := 0
		if w.Location != nil {
			at = w.Location.Start.Line
		}
		p.add("%s:%d: %s", path, at, w.Short)
	}
	lint := linter.New(&linter.Config{
		ExperimentalAll: true,
		Warn: func(rule, _, url, msg string, loc []parser.Range) {
			p.add("%s:%d: %s: %s (%s)", path, line(loc), rule, msg, url)
		},
	})
	stages, metaArgs, err := instructions.Parse(res.AST, lint)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	checkStages(&p, path, stages, metaArgs)
	if err := p.err(); err != nil {
		return err
	}
	fmt.Printf("%s: %d stages, final image from %s\n", path, len(stages), stages[len(stages)-1].BaseName)
	return nil
}

func line(loc []parser.Range) int {
	if len(loc) == 0 {
		return 0
	}
	return loc[0].Start.Line
}

// The build arguments BuildKit defines for every build.
var automaticArgs = []string{"BUILDPLATFORM", "BUILDOS", "BUILDARCH", "BUILDVARIANT",
	"TARGETPLATFORM", "TARGETOS", "TARGETARCH", "TARGETVARIANT"}

var digestRE = regexp.MustCompile(`@sha256:[a-f0-9]{64}$`)

func checkStages(p *problems, path string, stages []instructions.Stage, metaArgs []instructions.ArgCommand) {
	if len(stages) < 2 {
		p.add("%s: one stage; build in one stage and copy the binary into a small final one", path)
		return
	}
	env := []string{}
	for _, a := range automaticArgs {
		env = append(env, a+"=linux/amd64")
	}
	for _, cmd := range metaArgs {
		for _, kv := range cmd.Args {
			env = append(env, kv.Key+"="+kv.ValueString())
		}
	}
	lex := shell.NewLex(parser.DefaultEscapeToken)
	names := map[string]bool{}
	for i, st := range stages {
		where := fmt.Sprintf("%s:%d", path, line(st.Location))
		base, _, err := lex.ProcessWord(st.BaseName, shell.EnvsFromSlice(env))
		switch {
		case err != nil:
			p.add("%s: FROM %s: %v", where, st.BaseName, err)
		case base == "":
			p.add("%s: FROM %s names no image (an ARG without a default?)", where, st.BaseName)
		case names[strings.ToLower(base)] || base == "scratch":
		case !pinned(base):
			p.add("%s: base image %q is not pinned: name a version tag other than latest, or a digest", where, base)
		}
		for _, cmd := range st.Commands {
			checkCommand(p, path, names, cmd)
		}
		if st.Name != "" {
			names[strings.ToLower(st.Name)] = true
		}
		if i == len(stages)-1 {
			checkFinalStage(p, where, base, st)
		}
	}
	built := false
	for _, st := range stages[:len(stages)-1] {
		for _, cmd := range st.Commands {
			if run, ok := cmd.(*instructions.RunCommand); ok && strings.Contains(strings.Join(run.CmdLine, " "), "make static") {
				built = true
			}
		}
	}
	if !built {
		p.add("%s: no build stage runs `make static`, the build scripts/check-deploy.sh checks", path)
	}
}

// pinned reports whether an image reference names a digest or a tag other
// than latest.
func pinned(ref string) bool {
	if digestRE.MatchString(ref) {
		return true
	}
	name := ref
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	i := strings.LastIndex(name, ":")
	return i >= 0 && name[i+1:] != "" && name[i+1:] != "latest"
}

func checkCommand(p *problems, path string, stages map[string]bool, cmd instructions.Command) {
	where := fmt.Sprintf("%s:%d", path, line(cmd.Location()))
	switch c := cmd.(type) {
	case *instructions.AddCommand:
		for _, src := range c.SourcePaths {
			if strings.Contains(src, "://") {
				p.add("%s: ADD %s fetches from the network at build time; fetch in a RUN step with a checksum", where, src)
			}
		}
	case *instructions.CopyCommand:
		if c.From != "" && !stages[strings.ToLower(c.From)] {
			p.add("%s: COPY --from=%s is not an earlier stage", where, c.From)
		}
	case *instructions.EnvCommand:
		for _, kv := range c.Env {
			if strings.HasPrefix(kv.Key, "SVC_") {
				p.add("%s: ENV %s bakes configuration into the image; it would override every --config file", where, kv.Key)
			}
		}
	}
}

func checkFinalStage(p *problems, where, base string, st instructions.Stage) {
	var user string
	var entrypoint *instructions.EntrypointCommand
	var command *instructions.CmdCommand
	expose := false
	for _, cmd := range st.Commands {
		switch c := cmd.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			entrypoint = c
		case *instructions.CmdCommand:
			command = c
		case *instructions.ExposeCommand:
			for _, port := range c.Ports {
				if port == "8080" || port == "8080/tcp" {
					expose = true
				}
			}
		case *instructions.HealthCheckCommand:
			if base == "scratch" && c.Health != nil && len(c.Health.Test) > 0 && c.Health.Test[0] != "NONE" {
				p.add("%s: HEALTHCHECK on an image from scratch: nothing in it can run the check", where)
			}
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); user == "" || err != nil || n == 0 {
		p.add("%s: the final stage must end with USER <uid>[:<gid>], numeric and not 0 (got %q)", where, user)
	}
	if entrypoint == nil {
		p.add("%s: the final stage has no ENTRYPOINT", where)
	} else if entrypoint.PrependShell {
		p.add("%s: ENTRYPOINT in shell form: use the exec form, the image has no shell", where)
	}
	if command != nil && command.PrependShell {
		p.add("%s: CMD in shell form: use the exec form, the image has no shell", where)
	}
	if !expose {
		p.add("%s: the final stage does not EXPOSE 8080 (server.listen)", where)
	}
}
