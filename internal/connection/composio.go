package connection

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/svcdev/svc/internal/endpoint"
	"github.com/svcdev/svc/internal/provider/probe"
)

// Composio authorizes connections through Composio's v3 API: Begin creates a
// connected account (POST {base_url}/api/v3/connected_accounts with the
// project's key in x-api-key), whose answer carries the redirect URL for an
// OAuth app; Check reads it back (GET {base_url}/api/v3/connected_accounts/{id})
// until its status is ACTIVE, FAILED or EXPIRED.
type Composio struct {
	client  *http.Client
	timeout time.Duration
}

// NewComposio returns a Composio authorizer calling through client, whose
// calls each take at most timeout.
func NewComposio(client *http.Client, timeout time.Duration) *Composio {
	return &Composio{client: client, timeout: timeout}
}

// composioIDPattern is the shape of Composio's nano ids (ca_…, ac_…); an id
// of another shape in an answer is refused rather than stored.
var composioIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// maxComposioAnswer bounds the part of an answer that is read.
const maxComposioAnswer = 1 << 20

// composioAccount is the part of a connected account svc reads, from the
// create answer (whose top-level status and redirect_url Composio marks
// deprecated in favour of connectionData.val) and from the read answer.
type composioAccount struct {
	ID             string  `json:"id"`
	Status         string  `json:"status"`
	RedirectURL    *string `json:"redirect_url"`
	ConnectionData struct {
		Val struct {
			Status      string `json:"status"`
			RedirectURL string `json:"redirectUrl"`
		} `json:"val"`
	} `json:"connectionData"`
}

func (a composioAccount) status() string {
	if a.Status != "" {
		return a.Status
	}
	return a.ConnectionData.Val.Status
}

func (a composioAccount) redirectURL() string {
	if a.RedirectURL != nil && *a.RedirectURL != "" {
		return *a.RedirectURL
	}
	return a.ConnectionData.Val.RedirectURL
}

// Begin creates the connected account for the connection's auth config, filed
// under r.UserID.
func (c *Composio) Begin(ctx context.Context, r Request) (Progress, error) {
	authConfig, _ := r.Config["auth_config_id"].(string)
	conn := map[string]any{"user_id": r.UserID}
	if cb, ok := r.Config["callback_url"].(string); ok && cb != "" {
		conn["callback_url"] = cb
	}
	body := map[string]any{"auth_config": map[string]any{"id": authConfig}, "connection": conn}
	var a composioAccount
	if err := c.call(ctx, r, http.MethodPost, "/api/v3/connected_accounts", body, &a, false); err != nil {
		return Progress{}, err
	}
	if !composioIDPattern.MatchString(a.ID) {
		return Progress{}, &VendorError{Msg: "Composio's answer names no connected account; check the provider's base URL"}
	}
	p := composioProgress(a.ID, r.UserID, a.status())
	if p.Status == StatusPending {
		redirect, ok := safeRedirect(a.redirectURL())
		if !ok {
			return Progress{Status: StatusFailed, Message: "Composio gave no https address for the user to consent at; check that the auth config uses OAuth"}, nil
		}
		p.RedirectURL = redirect
	}
	return p, nil
}

// Check reads the connected account Begin created.
func (c *Composio) Check(ctx context.Context, r Request, state map[string]any) (Progress, error) {
	id, _ := state["connected_account_id"].(string)
	user, _ := state["user_id"].(string)
	if !composioIDPattern.MatchString(id) {
		return Progress{Status: StatusFailed, Message: "the authorization's state is not Composio's"}, nil
	}
	var a composioAccount
	if err := c.call(ctx, r, http.MethodGet, "/api/v3/connected_accounts/"+url.PathEscape(id), nil, &a, true); err != nil {
		return Progress{}, err
	}
	p := composioProgress(id, user, a.status())
	p.VendorState = state
	return p, nil
}

// composioProgress maps a connected account's status.
func composioProgress(id, user, status string) Progress {
	switch status {
	case "ACTIVE":
		return Progress{Status: StatusSucceeded, Credential: map[string]any{"connected_account_id": id}, Account: user}
	case "INITIALIZING", "INITIATED":
		return Progress{Status: StatusPending, VendorState: map[string]any{"connected_account_id": id, "user_id": user}}
	case "FAILED":
		return Progress{Status: StatusFailed, Message: "Composio reports that the authorization failed"}
	case "EXPIRED":
		return Progress{Status: StatusExpired, Message: "the authorization expired at Composio before the user completed it"}
	case "INACTIVE":
		return Progress{Status: StatusFailed, Message: "Composio reports that the connected account is disabled"}
	}
	return Progress{Status: StatusFailed, Message: "Composio answered with a status svc does not know"}
}

// call sends one request to the provider's Composio API and decodes a 2xx
// answer into out. Failures are *VendorError with fixed messages: neither the
// key, nor an address, nor any part of Composio's answer is repeated.
func (c *Composio) call(ctx context.Context, r Request, method, path string, body, out any, checking bool) error {
	base, _ := r.ProviderConfig["base_url"].(string)
	key, _ := r.ProviderCredential["api_key"].(string)
	if base == "" || key == "" {
		return &VendorError{Msg: "the Composio provider has no base URL or no API key"}
	}
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode Composio request: %w", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(base, "/")+path, rd)
	if err != nil {
		return &VendorError{Msg: "the provider's base URL is not a valid URL"}
	}
	req.Header.Set("x-api-key", key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return &VendorError{Msg: probe.DescribeCallError(err, c.timeout), Transient: !errors.Is(err, endpoint.ErrRefused), Err: err}
	}
	defer func() { _ = resp.Body.Close() }()
	if err := composioStatus(resp.StatusCode, checking); err != nil {
		return err
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxComposioAnswer))
	if err != nil {
		return &VendorError{Msg: probe.DescribeCallError(err, c.timeout), Transient: true, Err: err}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &VendorError{Msg: "Composio's answer could not be read; check the provider's base URL"}
	}
	return nil
}

// composioStatus turns a non-2xx status into an error.
func composioStatus(status int, checking bool) error {
	switch {
	case status >= 200 && status < 300:
		return nil
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return &VendorError{Msg: fmt.Sprintf("Composio refused the provider's API key (HTTP %d)", status)}
	case status == http.StatusNotFound && checking:
		return &VendorError{Msg: "Composio no longer knows the connected account being authorized (HTTP 404)"}
	case status == http.StatusNotFound:
		return &VendorError{Msg: "Composio answered HTTP 404 Not Found; check the connection's auth_config_id and the provider's base URL"}
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		return &VendorError{Msg: fmt.Sprintf("Composio refused the request (HTTP %d); check the connection's config", status)}
	case status == http.StatusTooManyRequests:
		return &VendorError{Msg: "Composio is rate limiting the provider's API key (HTTP 429)", Transient: true}
	case status >= 500:
		return &VendorError{Msg: fmt.Sprintf("Composio answered HTTP %d, a server error", status), Transient: true}
	case status >= 300 && status < 400:
		return &VendorError{Msg: fmt.Sprintf("the endpoint redirected (HTTP %d); configure the address it redirects to", status)}
	}
	return &VendorError{Msg: fmt.Sprintf("Composio answered HTTP %d", status)}
}

// safeRedirect accepts an absolute https URL of at most 2048 bytes without
// control characters or user information: the only kind of address svc hands
// a user to follow.
func safeRedirect(raw string) (string, bool) {
	if raw == "" || len(raw) > 2048 || strings.IndexFunc(raw, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return "", false
	}
	return raw, true
}
