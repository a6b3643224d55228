package docker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/sandbox"
)

// initCommand keeps the container running without relying on the image's
// entrypoint or command: a shell reading commands from a standard input that
// stays open (OpenStdin) and is never written to, so it waits for ever. The
// engine's init (Init) is PID 1, forwards the stop signal to it and reaps
// what commands leave behind. Only /bin/sh is needed in the image.
var initCommand = []string{"/bin/sh"}

// containerConfig is the body of POST /containers/create.
type containerConfig struct {
	Image        string            `json:"Image"`
	Entrypoint   []string          `json:"Entrypoint"`
	Cmd          []string          `json:"Cmd"`
	WorkingDir   string            `json:"WorkingDir"`
	User         string            `json:"User,omitempty"`
	Labels       map[string]string `json:"Labels"`
	OpenStdin    bool              `json:"OpenStdin"`
	StdinOnce    bool              `json:"StdinOnce"`
	AttachStdin  bool              `json:"AttachStdin"`
	AttachStdout bool              `json:"AttachStdout"`
	AttachStderr bool              `json:"AttachStderr"`
	Tty          bool              `json:"Tty"`
	HostConfig   hostConfig        `json:"HostConfig"`
}

type hostConfig struct {
	NanoCPUs      int64         `json:"NanoCpus,omitempty"`
	Memory        int64         `json:"Memory,omitempty"`
	NetworkMode   string        `json:"NetworkMode"`
	SecurityOpt   []string      `json:"SecurityOpt,omitempty"`
	Init          bool          `json:"Init"`
	RestartPolicy restartPolicy `json:"RestartPolicy"`
}

type restartPolicy struct {
	Name string `json:"Name"`
}

// containerInfo is the part of GET /containers/{id}/json that is used.
type containerInfo struct {
	ID    string `json:"Id"`
	State struct {
		Status  string `json:"Status"`
		Running bool   `json:"Running"`
		Paused  bool   `json:"Paused"`
	} `json:"State"`
	Config struct {
		WorkingDir string            `json:"WorkingDir"`
		Labels     map[string]string `json:"Labels"`
	} `json:"Config"`
}

// Create pulls the template's image when the engine lacks it, creates the
// environment's container (named svc-<environment id>) and starts it. It is
// idempotent: when the container already exists (a worker died between
// creating it and checkpointing the handle) it is started and its handle
// returned, with the deadline set the first time.
func (d *Driver) Create(ctx context.Context, spec sandbox.Spec) (sandbox.Handle, error) {
	name, err := containerName(spec.EnvironmentID)
	if err != nil {
		return nil, err
	}
	tc, err := parseTemplate(spec.Template)
	if err != nil {
		return nil, err
	}
	e, pc, err := d.connect(spec.Provider, spec.Credential)
	if err != nil {
		return nil, err
	}
	defer e.close()
	// The rows were checked when saved; they are checked again here, for rows
	// saved under a laxer configuration or written around the API.
	if err := d.guard.CheckNetwork(pc.Network); err != nil {
		return nil, err
	}
	if err := d.guard.CheckUser(tc.User); err != nil {
		return nil, err
	}
	if err := e.negotiate(ctx); err != nil {
		return nil, err
	}
	checkImageUser := tc.User == "" && !d.guard.AllowRoot
	imageUser, err := d.ensureImage(ctx, e, tc.Image, checkImageUser)
	if err != nil {
		return nil, err
	}
	if checkImageUser {
		if err := d.guard.CheckImageUser(tc.Image, imageUser); err != nil {
			return nil, err
		}
	}
	expires := d.now().UTC().Add(time.Duration(tc.TimeoutSeconds) * time.Second).Truncate(time.Second)
	cfg := containerConfig{
		Image:      tc.Image,
		Entrypoint: initCommand,
		Cmd:        []string{},
		WorkingDir: tc.Workdir,
		User:       tc.User,
		Labels: map[string]string{
			LabelEnvironment: spec.EnvironmentID,
			LabelWorkspace:   spec.WorkspaceID,
			LabelExpiresAt:   expires.Format(time.RFC3339),
		},
		OpenStdin: true,
		HostConfig: hostConfig{
			NanoCPUs:      int64(tc.CPU * 1e9),
			Memory:        tc.MemoryMB << 20,
			NetworkMode:   "none",
			Init:          true,
			RestartPolicy: restartPolicy{Name: "no"},
		},
	}
	if pc.Network != "" {
		cfg.HostConfig.NetworkMode = pc.Network
	}
	if !d.guard.AllowRoot {
		cfg.HostConfig.SecurityOpt = []string{"no-new-privileges"}
	}
	var created struct {
		ID string `json:"Id"`
	}
	status, err := e.call(ctx, "create container", http.MethodPost, "/containers/create", url.Values{"name": {name}}, cfg, &created)
	var containerID string
	switch {
	case status == http.StatusConflict:
		// The name is taken: our container from an earlier attempt, or not ours.
		info, err := e.inspect(ctx, name)
		if err != nil {
			return nil, err
		}
		if info.Config.Labels[LabelEnvironment] != spec.EnvironmentID {
			return nil, &Error{Op: "create container", Status: status, Message: "a container named " + name + " exists that svc did not make for this environment"}
		}
		if t, err := time.Parse(time.RFC3339, info.Config.Labels[LabelExpiresAt]); err == nil {
			expires = t
		}
		containerID = info.ID
	case err != nil:
		return nil, err
	default:
		containerID = created.ID
	}
	if !validContainerID(containerID) {
		return nil, &Error{Op: "create container", Message: "the engine returned no valid container id"}
	}
	if err := e.start(ctx, containerID); err != nil {
		return nil, err
	}
	return handle{ContainerID: containerID, APIVersion: e.version, ExpiresAt: expires}.encode()
}

// start starts a container; one already running is fine (304).
func (e *engine) start(ctx context.Context, containerID string) error {
	_, err := e.call(ctx, "start container", http.MethodPost, "/containers/"+containerID+"/start", nil, nil, nil)
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

// inspect reads a container (by id or name); 404 is ErrGone.
func (e *engine) inspect(ctx context.Context, ref string) (containerInfo, error) {
	var info containerInfo
	status, err := e.call(ctx, "inspect container", http.MethodGet, "/containers/"+url.PathEscape(ref)+"/json", nil, nil, &info)
	var de *Error
	if status == http.StatusNotFound && errors.As(err, &de) {
		return info, de.withCause(sandbox.ErrGone)
	}
	return info, err
}

// imageInfo is the part of GET /images/{ref}/json that is used.
type imageInfo struct {
	Config struct {
		// User is the image's user: what the container runs as when the
		// template names none ("" is root).
		User string `json:"User"`
	} `json:"Config"`
}

// ensureImage pulls image unless the engine has it. With wantUser it returns
// the image's user, inspecting the image again after a pull.
func (d *Driver) ensureImage(ctx context.Context, e *engine, image string, wantUser bool) (string, error) {
	var info imageInfo
	status, err := e.call(ctx, "inspect image", http.MethodGet, "/images/"+image+"/json", nil, nil, &info)
	switch {
	case err == nil:
		return info.Config.User, nil
	case status != http.StatusNotFound:
		return "", err
	}
	if err := d.pull(ctx, e, image); err != nil || !wantUser {
		return "", err
	}
	if _, err := e.call(ctx, "inspect image", http.MethodGet, "/images/"+image+"/json", nil, nil, &info); err != nil {
		return "", err
	}
	return info.Config.User, nil
}

// pull pulls image (POST /images/create), reading the progress stream to its
// end: the engine answers 200 at once and reports a failure inside the
// stream, as a JSON object with an error member.
func (d *Driver) pull(ctx context.Context, e *engine, image string) error {
	ctx, cancel := context.WithTimeout(ctx, d.pullTimeout)
	defer cancel()
	repo, tag := splitImage(image)
	resp, err := e.send(ctx, "pull image", http.MethodPost, "/images/create", url.Values{"fromImage": {repo}, "tag": {tag}}, nil, "")
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return engineError("pull image", resp)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		err := dec.Decode(&msg)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return transportError("pull image", ctx.Err())
			}
			return &Error{Op: "pull image", Message: "the engine's progress stream broke off"}
		}
		if m := cmp.Or(msg.ErrorDetail.Message, msg.Error); m != "" {
			return &Error{Op: "pull image", Message: clean(m)}
		}
	}
}

// splitImage splits a reference into the fromImage and tag parameters: the
// tag after the last colon that follows the last slash, a digest after @,
// and "latest" when there is neither (without a tag the engine would pull
// every tag of the repository).
func splitImage(ref string) (repo, tag string) {
	if i := strings.LastIndex(ref, "@"); i >= 0 {
		return ref[:i], ref[i+1:]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:]
	}
	return ref, "latest"
}
