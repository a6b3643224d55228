// Command example is a client of svc built on the generated Go client
// (github.com/svcdev/svc/gen/client). It walks the journey of an
// integration: it authenticates with an API key, makes sure a model and an
// agent exist (creating them when they do not), pages through a list with
// next_cursor, starts a run and follows its thread's event stream (closing
// the connection once on purpose and resuming with Last-Event-ID), and
// sends an asset up and reads it back as bytes.
//
// Usage:
//
//	go run . -url http://127.0.0.1:8080 -api-key svc_...
//
// Every flag has an environment variable (SVCDEV_URL, SVCDEV_API_KEY, ...;
// see README.md). It prints one line per step and exits non-zero, with the
// error in the contract's shape, when the service refuses a request.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/oapi-codegen/oapi-codegen/v2/pkg/securityprovider"

	"github.com/svcdev/svc/gen/client"
)

// options are the command's flags.
type options struct {
	url          string
	apiKey       string
	modelKey     string
	modelBaseURL string
	modelAPIKey  string
	modelName    string
	agentName    string
	input        string
	pageSize     int
	timeout      time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", env("SVCDEV_URL", "http://127.0.0.1:8080"), "svc's base URL (SVCDEV_URL)")
	flag.StringVar(&o.apiKey, "api-key", env("SVCDEV_API_KEY", ""), "an API key of the workspace (SVCDEV_API_KEY)")
	flag.StringVar(&o.modelKey, "model-key", env("SVCDEV_MODEL_KEY", "example"), "the workspace's model key the agent uses (SVCDEV_MODEL_KEY)")
	flag.StringVar(&o.modelBaseURL, "model-base-url", env("SVCDEV_MODEL_BASE_URL", ""), "an OpenAI-compatible server's base URL, to create the model when it does not exist (SVCDEV_MODEL_BASE_URL)")
	flag.StringVar(&o.modelAPIKey, "model-api-key", env("SVCDEV_MODEL_API_KEY", ""), "that server's bearer token, if it needs one (SVCDEV_MODEL_API_KEY)")
	flag.StringVar(&o.modelName, "model-name", env("SVCDEV_MODEL_NAME", "gpt-4.1-mini"), "the vendor's model name (SVCDEV_MODEL_NAME)")
	flag.StringVar(&o.agentName, "agent", env("SVCDEV_AGENT", "example-go"), "the agent to run, created when no agent has this name (SVCDEV_AGENT)")
	flag.StringVar(&o.input, "input", "What is the capital of France?", "the message the run answers")
	flag.IntVar(&o.pageSize, "page-size", 50, "page size of the agent list (1 to 200)")
	flag.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long the whole journey may take")
	flag.Parse()
	if o.apiKey == "" {
		fmt.Fprintln(os.Stderr, "example: an API key is needed: -api-key or SVCDEV_API_KEY (svc init prints the first one)")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func run(ctx context.Context, o options) error {
	// Bearer authentication without hand-written code: oapi-codegen's
	// security provider sets Authorization on every request. No client
	// timeout: the event stream stays open for as long as the run takes; ctx
	// bounds the journey.
	bearer, err := securityprovider.NewSecurityProviderBearerToken(o.apiKey)
	if err != nil {
		return err
	}
	api, err := client.NewClientWithResponses(o.url, client.WithRequestEditorFn(bearer.Intercept))
	if err != nil {
		return err
	}

	if err := whoAmI(ctx, api); err != nil {
		return err
	}
	if err := ensureModel(ctx, api, o); err != nil {
		return err
	}
	agentID, err := ensureAgent(ctx, api, o)
	if err != nil {
		return err
	}
	if err := runAgent(ctx, api, agentID, o.input); err != nil {
		return err
	}
	return assetRoundTrip(ctx, api)
}

// response is what every generated *Response has: the status and the raw body.
type response interface {
	StatusCode() int
	GetBody() []byte
}

// apiError describes an answer the journey did not expect. Every error the
// API answers has the contract's shape (client.Error): a code, a message,
// the request id to quote to an operator, and the fields at fault.
func apiError(op string, r response) error {
	var e client.Error
	if err := json.Unmarshal(r.GetBody(), &e); err != nil || e.Error.Code == "" {
		return fmt.Errorf("%s: HTTP %d", op, r.StatusCode())
	}
	msg := fmt.Sprintf("%s: HTTP %d %s: %s (request %s)", op, r.StatusCode(), e.Error.Code, e.Error.Message, e.Error.RequestId)
	if details, err := e.Error.Details.Get(); err == nil {
		for _, d := range details {
			msg += fmt.Sprintf("; %s: %s", d.Field, d.Reason)
		}
	}
	return errors.New(msg)
}

// whoAmI reads what the key is: its workspace and role. A wrong key is 401
// unauthenticated, in the error shape.
func whoAmI(ctx context.Context, api *client.ClientWithResponses) error {
	me, err := api.GetMeWithResponse(ctx)
	if err != nil {
		return err
	}
	if me.JSON200 == nil {
		return apiError("who am I", me)
	}
	fmt.Printf("workspace %s (%s) as %s\n", me.JSON200.Workspace.Name, me.JSON200.Workspace.Id, me.JSON200.Role)
	return nil
}

// ensureModel makes sure the workspace has the model the agent names,
// creating it (on a new OpenAI-compatible provider) when the read is 404.
func ensureModel(ctx context.Context, api *client.ClientWithResponses, o options) error {
	got, err := api.GetModelWithResponse(ctx, o.modelKey)
	if err != nil {
		return err
	}
	switch {
	case got.JSON200 != nil:
		fmt.Printf("model %s: found (%s)\n", got.JSON200.Key, got.JSON200.Model)
		return nil
	case got.JSON404 != nil:
		// Create it below.
	default:
		return apiError("read model", got)
	}
	if o.modelBaseURL == "" {
		return fmt.Errorf("model %q does not exist (%s): pass -model-base-url to create it", o.modelKey, got.JSON404.Error.Code)
	}
	req := client.CreateModelProviderRequest{
		Name:   "Example model server",
		Type:   "openai_compatible",
		Config: &client.ProviderConfig{"base_url": o.modelBaseURL},
	}
	if o.modelAPIKey != "" {
		req.Credential = &client.ProviderCredential{"api_key": o.modelAPIKey}
	}
	prv, err := api.CreateModelProviderWithResponse(ctx, &client.CreateModelProviderParams{}, req)
	if err != nil {
		return err
	}
	if prv.JSON201 == nil {
		return apiError("create model provider", prv)
	}
	m, err := api.CreateModelWithResponse(ctx, &client.CreateModelParams{}, client.CreateModelRequest{
		Key: o.modelKey, ProviderId: prv.JSON201.Id, Api: "chat_completions", Model: o.modelName,
	})
	if err != nil {
		return err
	}
	if m.JSON201 == nil {
		return apiError("create model", m)
	}
	fmt.Printf("model %s: created on provider %s\n", m.JSON201.Key, prv.JSON201.Id)
	return nil
}

// ensureAgent pages through the workspace's agents, next_cursor after
// next_cursor, for one named o.agentName, and creates it when there is none.
func ensureAgent(ctx context.Context, api *client.ClientWithResponses, o options) (string, error) {
	var (
		cursor *string
		found  *client.Agent
		pages  int
		agents int
	)
	limit := o.pageSize
	for {
		page, err := api.ListAgentsWithResponse(ctx, &client.ListAgentsParams{Limit: &limit, Cursor: cursor})
		if err != nil {
			return "", err
		}
		if page.JSON200 == nil {
			return "", apiError("list agents", page)
		}
		pages++
		agents += len(page.JSON200.Items)
		for i, a := range page.JSON200.Items {
			if a.Name == o.agentName && !a.Archived && found == nil {
				found = &page.JSON200.Items[i]
			}
		}
		// next_cursor is null on the last page.
		next, err := page.JSON200.NextCursor.Get()
		if err != nil {
			break
		}
		cursor = &next
	}
	fmt.Printf("agents: read %d on %d pages\n", agents, pages)
	if found != nil {
		fmt.Printf("agent %s: found %s\n", found.Name, found.Id)
		return found.Id, nil
	}
	instructions := "Answer in one short sentence."
	created, err := api.CreateAgentWithResponse(ctx, &client.CreateAgentParams{}, client.CreateAgentRequest{
		Name:   o.agentName,
		Config: client.AgentConfigInput{Model: o.modelKey, Instructions: &instructions},
	})
	if err != nil {
		return "", err
	}
	if created.JSON201 == nil {
		return "", apiError("create agent", created)
	}
	fmt.Printf("agent %s: created %s\n", created.JSON201.Name, created.JSON201.Id)
	return created.JSON201.Id, nil
}

// runAgent starts a run of the agent on a new thread and follows it to its
// end on the thread's stream, then reads the run's usage.
func runAgent(ctx context.Context, api *client.ClientWithResponses, agentID, input string) error {
	// An Idempotency-Key makes a retried start safe: a retry with the same key
	// and body replays the first answer instead of starting a second run.
	key := newKey()
	started, err := api.StartRunWithResponse(ctx, &client.StartRunParams{IdempotencyKey: &key},
		client.StartRunRequest{AgentId: agentID, Input: input})
	if err != nil {
		return err
	}
	if started.JSON202 == nil {
		// 429 rate_limited carries Retry-After (started.Headers429).
		return apiError("start run", started)
	}
	r := started.JSON202
	fmt.Printf("run %s: %s on thread %s\n", r.Id, r.Status, r.ThreadId)

	answer, err := follow(ctx, api, r.ThreadId, r.Id)
	if err != nil {
		return err
	}
	done, err := api.GetRunWithResponse(ctx, r.Id)
	if err != nil {
		return err
	}
	if done.JSON200 == nil {
		return apiError("read run", done)
	}
	if done.JSON200.Status != client.RunStatusSucceeded {
		msg := ""
		if e, err := done.JSON200.Error.Get(); err == nil {
			msg = ": " + e.Code + ": " + e.Message
		}
		return fmt.Errorf("run %s %s%s", r.Id, done.JSON200.Status, msg)
	}
	fmt.Printf("answer: %s\n", answer)
	fmt.Printf("run %s: %s, %d input and %d output tokens\n", r.Id, done.JSON200.Status,
		done.JSON200.Usage.InputTokens, done.JSON200.Usage.OutputTokens)
	return nil
}

// assetRoundTrip uploads bytes as an asset, downloads them, compares, and
// retires the asset with the ETag the upload answered (If-Match).
func assetRoundTrip(ctx context.Context, api *client.ClientWithResponses) error {
	content := make([]byte, 64<<10)
	_, _ = rand.Read(content)
	sum := sha256.Sum256(content)

	// The body is the content as it is, with its media type: not JSON, not a form.
	up, err := api.UploadAssetWithBodyWithResponse(ctx, &client.UploadAssetParams{Name: "example-go.bin"},
		"application/octet-stream", bytes.NewReader(content))
	if err != nil {
		return err
	}
	if up.JSON201 == nil {
		// 413 payload_too_large past limits.asset_bytes.
		return apiError("upload asset", up)
	}
	asset := up.JSON201
	if asset.Sha256 != hex.EncodeToString(sum[:]) || asset.Size != int64(len(content)) {
		return fmt.Errorf("asset %s: the service stored %d bytes with SHA-256 %s", asset.Id, asset.Size, asset.Sha256)
	}

	// GetAssetContentWithResponse reads the whole body; the plain
	// api.GetAssetContent answers the *http.Response to stream a large one.
	down, err := api.GetAssetContentWithResponse(ctx, asset.Id, &client.GetAssetContentParams{})
	if err != nil {
		return err
	}
	if down.StatusCode() != http.StatusOK {
		return apiError("download asset", down)
	}
	if !bytes.Equal(down.Body, content) {
		return fmt.Errorf("asset %s: downloaded %d bytes that differ from the %d uploaded", asset.Id, len(down.Body), len(content))
	}
	fmt.Printf("asset %s: %d bytes up and down, sha256 %s matches\n", asset.Id, len(down.Body), asset.Sha256[:12])

	// A change carries the ETag it was read with: a stale one is 412
	// precondition_failed, none 428 precondition_required.
	var etag string
	if up.Headers201 != nil && up.Headers201.ETag != nil {
		etag = *up.Headers201.ETag
	}
	retired, err := api.RetireAssetWithResponse(ctx, asset.Id, &client.RetireAssetParams{IfMatch: etag})
	if err != nil {
		return err
	}
	if retired.StatusCode() != http.StatusNoContent {
		return apiError("retire asset", retired)
	}
	fmt.Printf("asset %s: retired\n", asset.Id)
	return nil
}

// newKey is a random Idempotency-Key.
func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
