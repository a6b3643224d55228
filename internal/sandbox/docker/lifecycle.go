package docker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// Open attaches to the instance of h. An instance past its deadline is
// destroyed and ErrGone returned; a missing container (or one that is being
// removed, or no longer carries this environment's label) is ErrGone; a
// stopped container is started, a paused one unpaused. The caller closes the
// instance.
func (d *Driver) Open(ctx context.Context, spec sandbox.Spec, raw sandbox.Handle) (sandbox.Instance, error) {
	h, err := decodeHandle(raw)
	if err != nil {
		return nil, err
	}
	if !d.now().Before(h.ExpiresAt) {
		if err := d.Destroy(ctx, spec, raw); err != nil {
			return nil, fmt.Errorf("envdocker: destroy the expired instance: %w", err)
		}
		return nil, fmt.Errorf("envdocker: the instance's lifetime has ended: %w", sandbox.ErrGone)
	}
	e, err := d.attach(ctx, spec, h)
	if err != nil {
		return nil, err
	}
	info, err := e.inspect(ctx, h.ContainerID)
	if err == nil {
		err = checkOwner(info, spec.EnvironmentID)
	}
	if err == nil {
		err = e.resume(ctx, info)
	}
	if err != nil {
		e.close()
		return nil, err
	}
	return &Instance{e: e, id: h.ContainerID, workdir: info.Config.WorkingDir, expires: h.ExpiresAt, now: d.now}, nil
}

// attach connects to the engine of spec with the handle's API version.
func (d *Driver) attach(ctx context.Context, spec sandbox.Spec, h handle) (*engine, error) {
	e, _, err := d.connect(spec.Provider, spec.Credential)
	if err != nil {
		return nil, err
	}
	if h.APIVersion != "" {
		e.version = h.APIVersion
	}
	if err := e.negotiate(ctx); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// checkOwner refuses a container that is not this environment's (a handle
// copied to another environment, a name reused by someone else).
func checkOwner(info containerInfo, envID string) error {
	if info.Config.Labels[LabelEnvironment] != envID {
		return &Error{Op: "inspect container", Message: "the container is not this environment's", cause: sandbox.ErrGone}
	}
	if info.Config.WorkingDir == "" {
		return &Error{Op: "inspect container", Message: "the container has no working directory"}
	}
	return nil
}

// resume makes the container run: started when stopped, unpaused when paused.
func (e *engine) resume(ctx context.Context, info containerInfo) error {
	switch {
	case info.State.Status == "removing" || info.State.Status == "dead":
		return &Error{Op: "open", Message: "the container is " + info.State.Status, cause: sandbox.ErrGone}
	case info.State.Paused:
		_, err := e.call(ctx, "unpause container", http.MethodPost, "/containers/"+info.ID+"/unpause", nil, nil, nil)
		return err
	case !info.State.Running:
		return e.start(ctx, info.ID)
	}
	return nil
}

// Stop stops the container (the engine sends the stop signal and kills it
// after StopGraceSeconds); its file system is kept for a later Open. A
// stopped container is fine; a missing one is ErrGone.
func (d *Driver) Stop(ctx context.Context, spec sandbox.Spec, raw sandbox.Handle) error {
	h, err := decodeHandle(raw)
	if err != nil {
		return err
	}
	e, err := d.attach(ctx, spec, h)
	if err != nil {
		return err
	}
	defer e.close()
	// The engine answers once the container has stopped: allow for the grace.
	_, err = e.callWithin(ctx, e.callTimeout+StopGraceSeconds*time.Second, "stop container", http.MethodPost,
		"/containers/"+h.ContainerID+"/stop", url.Values{"t": {strconv.Itoa(StopGraceSeconds)}}, nil, nil)
	var de *Error
	if errors.As(err, &de) {
		switch de.Status {
		case http.StatusNotModified:
			return nil
		case http.StatusNotFound:
			return de.withCause(sandbox.ErrGone)
		}
	}
	return err
}

// Destroy removes the container with its anonymous volumes, killing it if it
// runs. A container already gone counts as destroyed.
func (d *Driver) Destroy(ctx context.Context, spec sandbox.Spec, raw sandbox.Handle) error {
	h, err := decodeHandle(raw)
	if err != nil {
		return err
	}
	e, err := d.attach(ctx, spec, h)
	if err != nil {
		return err
	}
	defer e.close()
	status, err := e.call(ctx, "remove container", http.MethodDelete, "/containers/"+h.ContainerID,
		url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
	if status == http.StatusNotFound {
		return nil
	}
	return err
}

// Renew is unsupported: an engine does not end containers on a timer. The
// lifetime is enforced by Open and the maintain sweep.
func (d *Driver) Renew(context.Context, sandbox.Spec, sandbox.Handle) error {
	return fmt.Errorf("envdocker: renew: %w", sandbox.ErrUnsupported)
}
