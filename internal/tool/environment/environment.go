// Package environment is the environment toolset: run_command, read_file,
// write_file and list_files in the environment of an agent with an
// environment template. The thread's environment is made or reopened (package
// environment's Runtime) on the first call, not before: a run that never uses
// it costs nothing. The files of the run's skills' packages are placed in it
// under skills/<skill name>/ when it is attached.
package environment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/svcdev/svc/internal/agent"
	"github.com/svcdev/svc/internal/asset"
	env "github.com/svcdev/svc/internal/environment"
	"github.com/svcdev/svc/internal/llm"
	"github.com/svcdev/svc/internal/revision"
	"github.com/svcdev/svc/internal/sandbox"
	"github.com/svcdev/svc/internal/skill"
	"github.com/svcdev/svc/internal/skillpkg"
	"github.com/svcdev/svc/internal/tool"
)

// Deps are what the environment toolset reads and calls through.
type Deps struct {
	// Runtime makes, reopens and touches the threads' environments.
	Runtime *env.Runtime
	// Skills answer the names and packages of the run's skills, and Assets
	// the packages' archives.
	Skills *skill.Service
	Assets *asset.Service
}

// Toolset builds the environment tools of runs.
type Toolset struct{ d Deps }

// New returns the environment toolset.
func New(d Deps) *Toolset { return &Toolset{d: d} }

var _ tool.Toolset = (*Toolset)(nil).ForRun

// ForRun offers the environment tools of an agent with an environment
// template; none for an agent without. The environment is attached on the
// first call and released when the attempt ends; a skill package that
// cannot be placed in it is a tool error.
func (t *Toolset) ForRun(_ context.Context, rc tool.RunContext) ([]tool.Tool, error) {
	e := rc.Config.Tools.Environment
	if e == nil {
		return nil, nil
	}
	s := &envSession{d: t.d, rc: rc, templateID: e.TemplateID}
	rc.OnClose(s.close)
	return s.tools(), nil
}

// envSession attaches the thread's environment once per attempt.
type envSession struct {
	d          Deps
	rc         tool.RunContext
	templateID string

	mu   sync.Mutex
	acq  *env.Acquired
	last time.Time
}

// close releases the attached instance, if any.
func (s *envSession) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acq != nil {
		_ = s.acq.Instance.Close()
		s.acq = nil
	}
}

// instance attaches the environment on first use; an unusable one is a
// tool error for the model.
func (s *envSession) instance(ctx context.Context) (sandbox.Instance, *tool.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.acq == nil {
		acq, err := s.d.Runtime.Acquire(ctx, s.rc.Run.WorkspaceID, s.rc.Run.ThreadID, s.templateID, s.rc.Run.CreatedByID)
		var u *env.Unusable
		if errors.As(err, &u) {
			res := tool.Errorf("the environment cannot be used: %s", u.Reason)
			return nil, &res, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if err := s.placeSkills(ctx, acq.Instance); err != nil {
			_ = acq.Instance.Close()
			var pe *packageError
			if !errors.As(err, &pe) {
				// svc's own failure (the database, the object store): the
				// attempt fails and its cause is logged, not shown.
				return nil, nil, err
			}
			res := tool.Errorf("the skills' files could not be placed in the environment: %v", pe.err)
			return nil, &res, nil
		}
		s.acq, s.last = &acq, time.Now()
	} else if time.Since(s.last) > 10*time.Second {
		if err := s.d.Runtime.Touch(ctx, s.acq.ID); err != nil {
			return nil, nil, err
		}
		s.last = time.Now()
	}
	return s.acq.Instance, nil, nil
}

// with runs fn on the attached instance, mapping the contract's errors onto
// results the model can act on.
func (s *envSession) with(ctx context.Context, fn func(sandbox.Instance) (tool.Result, error)) (tool.Result, error) {
	inst, res, err := s.instance(ctx)
	if err != nil || res != nil {
		if res != nil {
			return *res, nil
		}
		return tool.Result{}, err
	}
	out, err := fn(inst)
	switch {
	case err == nil:
		return out, nil
	case ctx.Err() != nil:
		return tool.Result{}, ctx.Err()
	case errors.Is(err, sandbox.ErrPath):
		return tool.Errorf("the path must be relative and stay inside the working directory"), nil
	case errors.Is(err, sandbox.ErrNotFound):
		return tool.Errorf("no such file or directory"), nil
	case errors.Is(err, sandbox.ErrGone):
		// The next call makes a new environment.
		s.close()
		return tool.Errorf("the environment ended; call again to work in a new one (files are lost)"), nil
	}
	return tool.Errorf("the environment refused: %v", err), nil
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

func (s *envSession) tools() []tool.Tool {
	return []tool.Tool{
		{Def: llm.Tool{Name: "run_command", Description: "Runs a shell command in the environment's working directory and answers its exit code and output.",
			Parameters: schema(`{"type":"object","properties":{"command":{"type":"string","description":"The command, run with sh -c."},"timeout_seconds":{"type":"integer","minimum":1,"maximum":3600}},"required":["command"],"additionalProperties":false}`)},
			Call: s.runCommand, Toolset: agent.ToolsetEnvironment},
		{Def: llm.Tool{Name: "read_file", Description: "Reads a text file of the environment (at most 1 MiB).",
			Parameters: schema(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
			Call: s.readFile, Toolset: agent.ToolsetEnvironment},
		{Def: llm.Tool{Name: "write_file", Description: "Writes a file of the environment, replacing it; missing directories are made.",
			Parameters: schema(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}`)},
			Call: s.writeFile, Toolset: agent.ToolsetEnvironment},
		{Def: llm.Tool{Name: "list_files", Description: "Lists a directory of the environment.",
			Parameters: schema(`{"type":"object","properties":{"path":{"type":"string","description":"Directory; empty for the working directory."}},"additionalProperties":false}`)},
			Call: s.listFiles, Toolset: agent.ToolsetEnvironment},
	}
}

func (s *envSession) runCommand(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Command        string `json:"command"`
		TimeoutSeconds int    `json:"timeout_seconds"`
	}
	if res, ok := tool.Decode(args, &in); !ok {
		return res, nil
	}
	if in.Command == "" {
		return tool.Errorf("command must not be empty"), nil
	}
	return s.with(ctx, func(inst sandbox.Instance) (tool.Result, error) {
		r, err := inst.Run(ctx, sandbox.Command{Argv: []string{"sh", "-c", in.Command}, Timeout: time.Duration(in.TimeoutSeconds) * time.Second})
		if err != nil {
			return tool.Result{}, err
		}
		return tool.JSON(map[string]any{
			"exit_code": r.ExitCode, "timed_out": r.TimedOut,
			"stdout": text(r.Stdout), "stderr": text(r.Stderr),
			"stdout_truncated": r.StdoutTruncated, "stderr_truncated": r.StderrTruncated,
		})
	})
}

func (s *envSession) readFile(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Path string `json:"path"`
	}
	if res, ok := tool.Decode(args, &in); !ok {
		return res, nil
	}
	return s.with(ctx, func(inst sandbox.Instance) (tool.Result, error) {
		f, err := inst.ReadFile(ctx, in.Path, sandbox.DefaultReadLimit)
		if err != nil {
			return tool.Result{}, err
		}
		if !utf8.Valid(f.Data) {
			return tool.Errorf("%s is not UTF-8 text (%d bytes)", in.Path, f.Size), nil
		}
		return tool.JSON(map[string]any{"content": string(f.Data), "size": f.Size, "truncated": f.Truncated})
	})
}

func (s *envSession) writeFile(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if res, ok := tool.Decode(args, &in); !ok {
		return res, nil
	}
	if len(in.Content) > sandbox.MaxWriteBytes {
		return tool.Errorf("content is larger than %d bytes", sandbox.MaxWriteBytes), nil
	}
	return s.with(ctx, func(inst sandbox.Instance) (tool.Result, error) {
		if err := inst.WriteFile(ctx, in.Path, []byte(in.Content)); err != nil {
			return tool.Result{}, err
		}
		return tool.JSON(map[string]any{"written": len(in.Content)})
	})
}

func (s *envSession) listFiles(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Path string `json:"path"`
	}
	if res, ok := tool.Decode(args, &in); !ok {
		return res, nil
	}
	return s.with(ctx, func(inst sandbox.Instance) (tool.Result, error) {
		entries, err := inst.List(ctx, in.Path)
		if err != nil {
			return tool.Result{}, err
		}
		return tool.JSON(map[string]any{"entries": entries})
	})
}

// text is output as the model reads it: invalid UTF-8 is replaced.
func text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return fmt.Sprintf("%q", b)
}

// placeSkills writes the files of each pinned skill revision's package under
// skills/<skill name>/.
func (s *envSession) placeSkills(ctx context.Context, inst sandbox.Instance) error {
	pins := make([]revision.Pin, len(s.rc.Run.SkillRevisions))
	for i, sr := range s.rc.Run.SkillRevisions {
		pins[i] = revision.Pin{HeadID: sr.SkillID, RevisionID: sr.RevisionID}
	}
	skills, err := s.d.Skills.Pinned(ctx, s.rc.Run.WorkspaceID, pins)
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for _, sk := range skills {
		dir := "skills/" + strings.TrimPrefix(tool.Name("", sk.Name, used), "_")
		if sk.Config.Package == nil {
			continue
		}
		data, err := s.readPackage(ctx, sk.Config.Package.AssetID)
		if err != nil {
			return fmt.Errorf("read the package of skill %q: %w", sk.Name, err)
		}
		if _, err := skillpkg.Unpack(bytes.NewReader(data), int64(len(data)), skillpkg.DefaultLimits, func(p string, content []byte) error {
			return inst.WriteFile(ctx, path.Join(dir, p), content)
		}); err != nil {
			return &packageError{fmt.Errorf("unpack skill %q: %w", sk.Name, err)}
		}
	}
	return nil
}

// readPackage reads a skill package's archive, at most one byte past what a
// package may hold (skillpkg refuses it then).
func (s *envSession) readPackage(ctx context.Context, assetID string) ([]byte, error) {
	a, err := s.d.Assets.GetForRun(ctx, s.rc.Run.WorkspaceID, assetID)
	if err != nil {
		return nil, err
	}
	rd, err := s.d.Assets.Open(ctx, a, 0, -1)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rd.Close() }()
	return io.ReadAll(io.LimitReader(rd, skillpkg.DefaultLimits.MaxBytes+1))
}

// packageError is a skill package that could not be unpacked into the
// environment: the package's or the environment's fault, which the model
// and the run's tenant may read.
type packageError struct{ err error }

func (e *packageError) Error() string { return e.err.Error() }
func (e *packageError) Unwrap() error { return e.err }
