package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/svcdev/svc/internal/config"
	"github.com/svcdev/svc/internal/sandbox"
)

// Driver serves the local type through the sandbox contract: each call
// builds the Provider of the template's configuration, so one Driver serves
// every local template of the deployment.
type Driver struct {
	envs config.Environments
	opts Options
}

// NewDriver returns the local type's driver; every call fails with
// ErrDisabled unless envs.LocalEnabled is set.
func NewDriver(envs config.Environments, opts Options) *Driver {
	return &Driver{envs: envs, opts: opts}
}

// handle is the local type's handle: the environment id names its folder.
type handle struct {
	ID string `json:"id"`
}

func (d *Driver) provider(spec sandbox.Spec) (*Provider, error) {
	cfg, err := ParseConfig(spec.Template)
	if err != nil {
		return nil, err
	}
	return New(d.envs, cfg, d.opts)
}

// Create implements sandbox.Driver.
func (d *Driver) Create(_ context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	p, err := d.provider(spec)
	if err != nil {
		return nil, err
	}
	e, err := p.Create(spec.EnvironmentID)
	if err != nil {
		return nil, err
	}
	_ = e.Close()
	b, err := json.Marshal(handle{ID: spec.EnvironmentID})
	return sandbox.Handle(b), err
}

// Open implements sandbox.Driver: a folder that is gone or expired is
// sandbox.ErrGone (an expired one is destroyed first).
func (d *Driver) Open(_ context.Context, spec sandbox.Spec, h sandbox.Handle) (sandbox.Instance, error) {
	p, err := d.provider(spec)
	if err != nil {
		return nil, err
	}
	var hd handle
	if err := json.Unmarshal(h, &hd); err != nil {
		return nil, fmt.Errorf("envlocal: malformed handle: %w", err)
	}
	e, err := p.Open(hd.ID)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("%w: %v", sandbox.ErrGone, err)
	case errors.Is(err, ErrExpired):
		_ = p.Destroy(hd.ID)
		return nil, fmt.Errorf("%w: %v", sandbox.ErrGone, err)
	case err != nil:
		return nil, err
	}
	return instance{e}, nil
}

// Stop implements sandbox.Driver: a folder cannot be stopped.
func (d *Driver) Stop(context.Context, sandbox.Spec, sandbox.Handle) error {
	return sandbox.ErrUnsupported
}

// Destroy implements sandbox.Driver.
func (d *Driver) Destroy(_ context.Context, spec sandbox.Spec, h sandbox.Handle) error {
	p, err := d.provider(spec)
	if err != nil {
		return err
	}
	var hd handle
	if err := json.Unmarshal(h, &hd); err != nil {
		return fmt.Errorf("envlocal: malformed handle: %w", err)
	}
	if err := p.Destroy(hd.ID); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// Renew implements sandbox.Driver: a folder has no vendor timer.
func (d *Driver) Renew(context.Context, sandbox.Spec, sandbox.Handle) error {
	return sandbox.ErrUnsupported
}

// instance adapts an Env to sandbox.Instance.
type instance struct{ e *Env }

func (i instance) Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error) {
	r, err := i.e.Run(ctx, Command{Argv: c.Argv, Dir: c.Dir, Env: c.Env, Stdin: c.Stdin, Timeout: c.Timeout, OutputLimit: c.OutputLimit})
	if err != nil {
		return sandbox.Result{}, mapErr(err)
	}
	return sandbox.Result{ExitCode: r.ExitCode, Stdout: r.Stdout, Stderr: r.Stderr, StdoutTruncated: r.StdoutTruncated,
		StderrTruncated: r.StderrTruncated, TimedOut: r.TimedOut, Duration: r.Duration}, nil
}

func (i instance) ReadFile(_ context.Context, path string, limit int64) (sandbox.File, error) {
	r, err := i.e.ReadFile(path, limit)
	if err != nil {
		return sandbox.File{}, mapErr(err)
	}
	return sandbox.File{Data: r.Data, Size: r.Size, Truncated: r.Truncated}, nil
}

func (i instance) WriteFile(_ context.Context, path string, data []byte) error {
	return mapErr(i.e.WriteFile(path, data))
}

func (i instance) List(_ context.Context, dir string) ([]sandbox.Entry, error) {
	l, err := i.e.List(dir)
	if err != nil {
		return nil, mapErr(err)
	}
	out := make([]sandbox.Entry, len(l.Entries))
	for j, e := range l.Entries {
		out[j] = sandbox.Entry{Name: e.Name, Dir: e.IsDir, Size: e.Size}
	}
	return out, nil
}

func (i instance) Close() error { return i.e.Close() }

// mapErr maps the package's errors onto the sandbox contract's.
func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrOutside):
		return fmt.Errorf("%w: %v", sandbox.ErrPath, err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %v", sandbox.ErrNotFound, err)
	case errors.Is(err, ErrExpired), errors.Is(err, ErrNotFound):
		return fmt.Errorf("%w: %v", sandbox.ErrGone, err)
	}
	return err
}
