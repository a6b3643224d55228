package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const templatesPath = "/api/v1/environment-templates"

type templatesBundle struct {
	*providersBundle
	docker string // an environment provider that can stop and delete
}

func setupTemplates(t *testing.T) *templatesBundle {
	t.Helper()
	b := setupProviders(t)
	return &templatesBundle{providersBundle: b, docker: b.dockerProvider(t)}
}

// body returns a valid create body on the docker provider, with extra members.
func (b *templatesBundle) body(name string, extra map[string]any) map[string]any {
	out := map[string]any{"name": name, "environment_provider_id": b.docker, "config": map[string]any{"image": "python:3.13-slim"}}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// mustTemplate creates a template and returns its view.
func (b *templatesBundle) mustTemplate(t *testing.T, name string, extra map[string]any) map[string]any {
	t.Helper()
	status, out, hdr := b.do(t, http.MethodPost, templatesPath, b.body(name, extra))
	require.Equal(t, http.StatusCreated, status, out)
	require.Equal(t, templatesPath+"/"+out["id"].(string), hdr.Get("Location"))
	require.Equal(t, etag(out), hdr.Get("ETag"))
	return out
}

// list lists templates with the raw query and returns the names in order.
func (b *templatesBundle) list(t *testing.T, query string) (int, []string, map[string]any) {
	t.Helper()
	status, out, _ := b.do(t, http.MethodGet, templatesPath+"?"+query, nil)
	if status != http.StatusOK {
		return status, nil, out
	}
	var names []string
	for _, it := range out["items"].([]any) {
		names = append(names, it.(map[string]any)["name"].(string))
	}
	return status, names, out
}

func (b *templatesBundle) count(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.h.App.Pool.QueryRow(t.Context(), `SELECT count(*) FROM environment_template`).Scan(&n))
	return n
}

func TestTemplatesCreateReadList(t *testing.T) {
	t.Parallel()
	b := setupTemplates(t)
	name := "Песочница Python 🐍 日本"
	tpl := b.mustTemplate(t, name, map[string]any{
		"description": "Short-lived\ncontainers", "idle_stop_seconds": 900, "idle_delete_seconds": 86400,
		"labels": map[string]any{"team": "platform", "env": "prod", "app.kubernetes.io/name": "Sandbox 1"},
		"config": map[string]any{"image": "python:3.13-slim", "cpu": 2, "memory_mb": 4096},
	})
	require.Regexp(t, `^et_[0-9a-z]{26}$`, tpl["id"])
	require.Equal(t, name, tpl["name"], "any script round-trips")
	require.Equal(t, "Short-lived\ncontainers", tpl["description"])
	require.Equal(t, b.docker, tpl["environment_provider_id"])
	require.Equal(t, map[string]any{"image": "python:3.13-slim", "cpu": float64(2), "memory_mb": float64(4096)}, tpl["config"])
	require.EqualValues(t, 900, tpl["idle_stop_seconds"])
	require.EqualValues(t, 86400, tpl["idle_delete_seconds"])
	require.Equal(t, map[string]any{"team": "platform", "env": "prod", "app.kubernetes.io/name": "Sandbox 1"}, tpl["labels"])
	require.Equal(t, true, tpl["enabled"])
	require.EqualValues(t, 1, tpl["version"])
	require.Equal(t, b.admin.PrincipalID, tpl["created_by_id"])
	require.Equal(t, b.admin.PrincipalID, tpl["updated_by_id"])
	require.Equal(t, []string{"environment_template.created:config,description,enabled,environment_provider_id,idle_delete_seconds,idle_stop_seconds,labels,name"},
		b.auditTrail(t, tpl["id"].(string)))

	status, got, hdr := b.do(t, http.MethodGet, templatesPath+"/"+tpl["id"].(string), nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, tpl, got)
	require.Equal(t, etag(tpl), hdr.Get("ETag"))

	// Defaults: no description, thresholds, labels; enabled.
	plain := b.mustTemplate(t, "plain", nil)
	require.Equal(t, "", plain["description"])
	require.Contains(t, plain, "idle_stop_seconds")
	require.Nil(t, plain["idle_stop_seconds"])
	require.Nil(t, plain["idle_delete_seconds"])
	require.Equal(t, map[string]any{}, plain["labels"])

	// A viewer reads but cannot create.
	status, _, _ = b.do(t, http.MethodGet, templatesPath+"/"+tpl["id"].(string), nil, as(b.viewer.Token)...)
	require.Equal(t, http.StatusOK, status)
	status, out, _ := b.do(t, http.MethodPost, templatesPath, b.body("viewer-made", nil), as(b.viewer.Token)...)
	require.Equal(t, http.StatusForbidden, status, out)

	_, names, _ := b.list(t, "")
	require.Equal(t, []string{"plain", name}, names, "newest first")
}

func TestTemplatesRefuseBadInput(t *testing.T) {
	t.Parallel()
	b := setupTemplates(t)
	labels33 := map[string]any{}
	for i := range 33 {
		labels33["k"+strconv.Itoa(i)] = "v"
	}
	labels32 := map[string]any{}
	for i := range 32 {
		labels32["k"+strconv.Itoa(i)] = "v"
	}
	cases := []struct {
		name  string
		extra map[string]any
		field string
	}{
		{"33 labels", map[string]any{"labels": labels33}, "labels"},
		{"uppercase label key", map[string]any{"labels": map[string]any{"Team": "a"}}, "labels"},
		{"label key with a space", map[string]any{"labels": map[string]any{"my team": "a"}}, "labels"},
		{"label key with a colon", map[string]any{"labels": map[string]any{"a:b": "a"}}, "labels"},
		{"label key of 64 characters", map[string]any{"labels": map[string]any{"a" + strings.Repeat("b", 63): "a"}}, "labels"},
		{"label key in Cyrillic", map[string]any{"labels": map[string]any{"\u0430pp": "a"}}, "labels"},
		{"label value of 64 characters", map[string]any{"labels": map[string]any{"env": strings.Repeat("é", 64)}}, "labels.env"},
		{"label value with a newline", map[string]any{"labels": map[string]any{"env": "a\nb"}}, "labels.env"},
		{"label value with a zero-width space", map[string]any{"labels": map[string]any{"env": "a\u200bb"}}, "labels.env"},
		{"label value that is not a string", map[string]any{"labels": map[string]any{"env": 1}}, "labels.env"},
		{"name with a control character", map[string]any{"name": "a\u0007b"}, "name"},
		{"empty name", map[string]any{"name": ""}, "name"},
		{"name of 201 characters", map[string]any{"name": strings.Repeat("名", 201)}, "name"},
		{"description of 2001 characters", map[string]any{"description": strings.Repeat("d", 2001)}, "description"},
		{"description with NUL-like control", map[string]any{"description": "a\u0001b"}, "description"},
		{"config the type refuses", map[string]any{"config": map[string]any{"image": "x", "cpu": 0}}, "config.cpu"},
		{"config without the required image", map[string]any{"config": map[string]any{}}, "config"},
		{"idle_stop_seconds too small", map[string]any{"idle_stop_seconds": 59}, "idle_stop_seconds"},
		{"idle_delete_seconds too large", map[string]any{"idle_delete_seconds": 31536001}, "idle_delete_seconds"},
		{"delete before stop", map[string]any{"idle_stop_seconds": 3600, "idle_delete_seconds": 600}, "idle_delete_seconds"},
		{"unknown member", map[string]any{"labelz": map[string]any{}}, "labelz"},
	}
	for _, tc := range cases {
		body := b.body("x", tc.extra)
		status, out, _ := b.do(t, http.MethodPost, templatesPath, body)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", tc.name, out)
		require.Equal(t, "invalid_argument", errorCode(t, out))
		got := fields(t, out)
		require.True(t, slices.ContainsFunc(got, func(f string) bool { return f == tc.field || strings.HasPrefix(f, tc.field+".") }),
			"%s: fields %v, want %s", tc.name, got, tc.field)
	}
	require.Zero(t, b.count(t), "nothing was stored")

	// The edges that are allowed.
	longest := strings.Repeat("名", 200)
	b.mustTemplate(t, longest, map[string]any{"labels": labels32, "idle_stop_seconds": 60, "idle_delete_seconds": 60})
	b.mustTemplate(t, "edge values", map[string]any{"labels": map[string]any{"a" + strings.Repeat("b", 62): strings.Repeat("é", 63), "empty": ""},
		"idle_delete_seconds": 31536000})

	// A type that cannot stop environments refuses idle_stop_seconds, not idle_delete_seconds.
	modal := b.modalProvider(t)
	body := map[string]any{"name": "m", "environment_provider_id": modal, "config": map[string]any{"image": "python:3.13"}, "idle_stop_seconds": 600}
	status, out, _ := b.do(t, http.MethodPost, templatesPath, body)
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, []string{"idle_stop_seconds"}, fields(t, out))
	delete(body, "idle_stop_seconds")
	body["idle_delete_seconds"] = 600
	status, out, _ = b.do(t, http.MethodPost, templatesPath, body)
	require.Equal(t, http.StatusCreated, status, out)
}

func TestTemplatesProviderReferences(t *testing.T) {
	t.Parallel()
	b := setupTemplates(t)
	other := &providersBundle{h: b.h, admin: b.admin}
	otherKey := b.otherWorkspace(t)
	other.admin.APIKey = otherKey
	foreign := other.dockerProvider(t)

	// Another workspace's environment provider and an absent id: the same 404 naming the field.
	var messages []string
	for _, id := range []string{foreign, "prv_01jd5v6w1q3yb8j8y3tn9z2k7h"} {
		status, out, _ := b.do(t, http.MethodPost, templatesPath, b.body("x", map[string]any{"environment_provider_id": id}))
		require.Equal(t, http.StatusNotFound, status, out)
		require.Equal(t, []string{"environment_provider_id"}, fields(t, out))
		messages = append(messages, errorMessage(t, out))
	}
	require.Equal(t, messages[0], messages[1])

	// A provider of another kind: 400 naming the field.
	mp := b.memoryProvider(t)
	status, out, _ := b.do(t, http.MethodPost, templatesPath, b.body("x", map[string]any{"environment_provider_id": mp}))
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, []string{"environment_provider_id"}, fields(t, out))

	// A disabled provider: 409 disabled; a template already on it can still be edited.
	tpl := b.mustTemplate(t, "before", nil)
	b.disable(t, "environment", b.docker)
	status, out, _ = b.do(t, http.MethodPost, templatesPath, b.body("x", nil))
	require.Equal(t, http.StatusConflict, status, out)
	require.Equal(t, "disabled", errorCode(t, out))
	require.Equal(t, []string{"environment_provider_id"}, fields(t, out))
	status, out, _ = b.do(t, http.MethodPatch, templatesPath+"/"+tpl["id"].(string),
		map[string]any{"name": "after", "config": map[string]any{"image": "node:22"}}, "If-Match", etag(tpl))
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, 1, b.count(t), "no refused template was stored")
}

func TestTemplatesPatch(t *testing.T) {
	t.Parallel()
	b := setupTemplates(t)
	tpl := b.mustTemplate(t, "main", map[string]any{"labels": map[string]any{"team": "a"}, "idle_stop_seconds": 600, "idle_delete_seconds": 3600})
	id := tpl["id"].(string)
	path := templatesPath + "/" + id
	patch := func(body map[string]any, header ...string) (int, map[string]any, http.Header) {
		return b.do(t, http.MethodPatch, path, body, header...)
	}

	status, out, _ := patch(map[string]any{"name": "x"})
	require.Equal(t, http.StatusPreconditionRequired, status, out)
	status, out, _ = patch(map[string]any{"name": "x"}, "If-Match", `"`+id+`:9"`)
	require.Equal(t, http.StatusPreconditionFailed, status, out)
	status, out, _ = patch(map[string]any{"name": "x"}, "If-Match", `"et_01jd5v6w1q3yb8j8y3tn9z2k7h:1"`)
	require.Equal(t, http.StatusPreconditionFailed, status, "another resource's ETag is stale here: %v", out)

	// An empty PATCH, and one that resends every stored value, keep the version.
	for _, body := range []map[string]any{{}, {
		"name": "main", "description": "", "config": map[string]any{"image": "python:3.13-slim"}, "labels": map[string]any{"team": "a"},
		"idle_stop_seconds": 600, "idle_delete_seconds": 3600, "enabled": true,
	}} {
		status, out, hdr := patch(body, "If-Match", etag(tpl))
		require.Equal(t, http.StatusOK, status, out)
		require.Equal(t, tpl, out)
		require.Equal(t, etag(tpl), hdr.Get("ETag"))
	}
	require.Len(t, b.auditTrail(t, id), 1, "no audit event for a change to nothing")

	// A real change: one version, the changed fields named.
	status, out, hdr := patch(map[string]any{"description": "Data work", "labels": map[string]any{"team": "b", "env": "dev"},
		"idle_stop_seconds": nil, "enabled": false}, "If-Match", id+":1")
	require.Equal(t, http.StatusOK, status, out)
	require.EqualValues(t, 2, out["version"])
	require.Equal(t, `"`+id+`:2"`, hdr.Get("ETag"))
	require.Equal(t, "Data work", out["description"])
	require.Equal(t, map[string]any{"team": "b", "env": "dev"}, out["labels"], "labels are replaced whole")
	require.Nil(t, out["idle_stop_seconds"], "null removes the threshold")
	require.EqualValues(t, 3600, out["idle_delete_seconds"], "left out keeps it")
	require.Equal(t, false, out["enabled"])
	require.Equal(t, "environment_template.updated:description,enabled,idle_stop_seconds,labels", b.auditTrail(t, id)[1])
	tpl = out

	// Labels {} removes them all.
	status, out, _ = patch(map[string]any{"labels": map[string]any{}}, "If-Match", etag(tpl))
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, map[string]any{}, out["labels"])
	tpl = out

	// The result is validated as a whole: a stop threshold past the kept
	// delete threshold, a config the type refuses, 33 labels.
	status, out, _ = patch(map[string]any{"idle_stop_seconds": 7200}, "If-Match", etag(tpl))
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, []string{"idle_delete_seconds"}, fields(t, out))
	status, out, _ = patch(map[string]any{"config": map[string]any{"image": "x", "memory_mb": 1}}, "If-Match", etag(tpl))
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, []string{"config.memory_mb"}, fields(t, out))
	many := map[string]any{}
	for i := range 33 {
		many["k"+strconv.Itoa(i)] = "v"
	}
	status, out, _ = patch(map[string]any{"labels": many}, "If-Match", etag(tpl))
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, []string{"labels"}, fields(t, out))
	status, out, _ = patch(map[string]any{"environment_provider_id": b.docker}, "If-Match", etag(tpl))
	require.Equal(t, http.StatusBadRequest, status, "the provider never changes: %v", out)

	// A viewer cannot change it; nothing refused changed it.
	status, _, _ = patch(map[string]any{"name": "viewer"}, as(b.viewer.Token, "If-Match", etag(tpl))...)
	require.Equal(t, http.StatusForbidden, status)
	_, got, _ := b.do(t, http.MethodGet, path, nil)
	require.Equal(t, tpl, got)
}

// TestTemplatesConcurrentPatch: of writers holding one ETag, exactly one wins.
func TestTemplatesConcurrentPatch(t *testing.T) {
	t.Parallel()
	b := setupTemplates(t)
	tpl := b.mustTemplate(t, "race", nil)
	path := templatesPath + "/" + tpl["id"].(string)
	raceOnce(t, 8, http.StatusOK, func(i int) int {
		status, _, _ := b.do(t, http.MethodPatch, path, map[string]any{"name": "writer-" + strconv.Itoa(i)}, "If-Match", etag(tpl))
		return status
	})
	_, got, _ := b.do(t, http.MethodGet, path, nil)
	require.EqualValues(t, 2, got["version"])
	require.Len(t, b.auditTrail(t, tpl["id"].(string)), 2)
}

// TestTemplatesAcrossWorkspaces: another workspace's
// template answers exactly like a missing one.
func TestTemplatesAcrossWorkspaces(t *testing.T) {
	t.Parallel()
	b := setupTemplates(t)
	tpl := b.mustTemplate(t, "mine", nil)
	other := b.otherWorkspace(t)
	var bodies []string
	for _, id := range []string{tpl["id"].(string), "et_01jd5v6w1q3yb8j8y3tn9z2k7h"} {
		status, out, hdr := b.do(t, http.MethodGet, templatesPath+"/"+id, nil, as(other)...)
		require.Equal(t, http.StatusNotFound, status)
		require.Empty(t, hdr.Get("ETag"))
		bodies = append(bodies, errorMessage(t, out))
		for _, tag := range []string{"", etag(tpl), "*"} {
			h := as(other)
			if tag != "" {
				h = append(h, "If-Match", tag)
			}
			status, out, _ := b.do(t, http.MethodPatch, templatesPath+"/"+id, map[string]any{"enabled": false}, h...)
			want := http.StatusNotFound
			if tag == "" {
				want = http.StatusPreconditionRequired // before any template is looked up
			}
			require.Equal(t, want, status, "id %s etag %q", id, tag)
			bodies = append(bodies, errorMessage(t, out))
		}
	}
	require.Equal(t, bodies[:4], bodies[4:], "the same answers as for a missing template")
	status, out, _ := b.do(t, http.MethodGet, templatesPath, nil, as(other)...)
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, out["items"])
}

func TestTemplatesListFilters(t *testing.T) {
	t.Parallel()
	b := setupTemplates(t)
	b.mustTemplate(t, "Alpha", map[string]any{"labels": map[string]any{"team": "core", "env": "prod", "tier": "gold"}, "description": "GPU notebooks"})
	b.mustTemplate(t, "Beta", map[string]any{"labels": map[string]any{"team": "core", "env": "dev"}, "description": "100% cached_builds"})
	b.mustTemplate(t, "Gamma ÉCOLE", map[string]any{"labels": map[string]any{"team": "web", "env": "prod", "url": "https://x:1"}, "enabled": false})
	b.mustTemplate(t, "Delta", nil)
	// Another workspace with the same labels: never in this workspace's lists.
	other := &templatesBundle{providersBundle: &providersBundle{h: b.h, admin: b.admin}}
	other.admin.APIKey = b.otherWorkspace(t)
	other.docker = other.dockerProvider(t)
	other.mustTemplate(t, "Foreign Alpha", map[string]any{"labels": map[string]any{"team": "core", "env": "prod", "tier": "gold"}, "description": "GPU"})
	_, names, _ := other.list(t, "label=team:core&label=env:prod")
	require.Equal(t, []string{"Foreign Alpha"}, names, "and the other way round")

	q := func(pairs ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(pairs); i += 2 {
			v.Add(pairs[i], pairs[i+1])
		}
		return v.Encode()
	}
	cases := []struct {
		query string
		want  []string
	}{
		{q(), []string{"Delta", "Gamma ÉCOLE", "Beta", "Alpha"}},
		{q("label", "team:core"), []string{"Beta", "Alpha"}},
		{q("label", "team:core", "label", "env:prod"), []string{"Alpha"}},
		{q("label", "team:core", "label", "env:prod", "label", "tier:gold"), []string{"Alpha"}},
		{q("label", "env:prod", "label", "env:prod"), []string{"Gamma ÉCOLE", "Alpha"}},
		{q("label", "env:prod", "label", "env:dev"), nil},
		{q("label", "team:nobody"), nil},
		{q("label", "url:https://x:1"), []string{"Gamma ÉCOLE"}},
		{q("q", "ALPHA"), []string{"Alpha"}},
		{q("q", "gpu"), []string{"Alpha"}},
		{q("q", "école"), []string{"Gamma ÉCOLE"}},
		{q("q", "100%"), []string{"Beta"}},
		{q("q", "%"), []string{"Beta"}},
		{q("q", "cache_"), nil}, // an unescaped _ would match the d of "cached"
		{q("q", "cached_b"), []string{"Beta"}},
		{q("archived", "true"), []string{"Gamma ÉCOLE"}},
		{q("archived", "false"), []string{"Delta", "Beta", "Alpha"}},
		{q("archived", "false", "label", "env:prod"), []string{"Alpha"}},
		{q("q", "a", "label", "team:core", "archived", "false"), []string{"Beta", "Alpha"}},
	}
	for _, tc := range cases {
		status, names, out := b.list(t, tc.query)
		require.Equal(t, http.StatusOK, status, "%s: %v", tc.query, out)
		require.Equal(t, tc.want, names, tc.query)
	}

	// Pages keep the filter.
	status, names, out := b.list(t, q("label", "team:core", "limit", "1"))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{"Beta"}, names)
	status, names, _ = b.list(t, q("label", "team:core", "limit", "1", "cursor", out["next_cursor"].(string)))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, []string{"Alpha"}, names)

	// Refused selectors and queries: 400 naming the parameter.
	nine := make([]string, 0, 18)
	for i := range 9 {
		nine = append(nine, "label", "k"+strconv.Itoa(i)+":v")
	}
	eight := nine[:16]
	status, _, out = b.list(t, q(eight...))
	require.Equal(t, http.StatusOK, status, "8 selectors are allowed: %v", out)
	for _, bad := range []string{q(nine...), q("label", "team"), q("label", "Team:core"), q("label", ":core"),
		q("label", "team:"+strings.Repeat("x", 64)), q("label", "team:a\tb")} {
		status, _, out := b.list(t, bad)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", bad, out)
		require.Equal(t, []string{"label"}, fields(t, out), bad)
	}
	for _, bad := range []string{q("q", strings.Repeat("x", 201)), q("q", "a\x01")} {
		status, _, out := b.list(t, bad)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", bad, out)
		require.Equal(t, []string{"q"}, fields(t, out), bad)
	}
	status, _, out = b.list(t, q("archived", "maybe"))
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, []string{"archived"}, fields(t, out))
}

func TestTemplatesCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	b := setupTemplates(t)
	body := b.body("retry", nil)
	status, first, hdr := b.do(t, http.MethodPost, templatesPath, body, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusCreated, status, first)
	status, again, hdr2 := b.do(t, http.MethodPost, templatesPath, body, "Idempotency-Key", "k-1")
	require.Equal(t, http.StatusCreated, status, again)
	require.Equal(t, "true", hdr2.Get("Idempotent-Replayed"))
	require.Equal(t, first, again)
	require.Equal(t, hdr.Get("ETag"), hdr2.Get("ETag"))
	require.Equal(t, 1, b.count(t))
}
