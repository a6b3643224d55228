package httpapi_test

import (
	"archive/zip"
	"bytes"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svcdev/svc/gen/client"
)

// refused creates an agent with cfg and asserts the status, the error code and
// the one field named.
func (b *agentsBundle) refused(t *testing.T, cfg map[string]any, status int, code, field string) {
	t.Helper()
	got, out, _ := b.do(t, http.MethodPost, "/api/v1/agents", map[string]any{"name": "refused", "config": cfg})
	require.Equal(t, status, got, out)
	require.Equal(t, code, out["error"].(map[string]any)["code"], out)
	require.Equal(t, []string{field}, fields(t, out), out)
}

func TestAgentsModelReferences(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	// Another workspace's model key, and an absent one: the same 404 naming config.model.
	ws, err := b.api.CreateWorkspaceWithResponse(t.Context(), nil, client.CreateWorkspaceRequest{Name: "other"})
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, ws.StatusCode(), string(ws.Body))
	other := &modelsBundle{providersBundle: &providersBundle{h: b.h, admin: b.admin, api: b.h.Client(t, ws.JSON201.ApiKey)}}
	other.openai = other.createProvider(t, "openai")
	other.mustModel(t, "theirs")
	b.refused(t, map[string]any{"model": "theirs"}, http.StatusNotFound, "not_found", "config.model")
	b.refused(t, map[string]any{"model": "never-made"}, http.StatusNotFound, "not_found", "config.model")

	// A disabled model: 409 disabled; on publish too, and nothing is written.
	a := b.mustAgent(t, "uses-main", map[string]any{"model": "main"})
	b.mustModel(t, "off")
	off := false
	resp := b.patch(t, b.api, "off", `"off:1"`, client.UpdateModelRequest{Enabled: &off})
	require.Equal(t, http.StatusOK, resp.StatusCode(), string(resp.Body))
	b.refused(t, map[string]any{"model": "off"}, http.StatusConflict, "disabled", "config.model")
	status, out := b.publish(t, "/api/v1/agents/"+a["id"].(string), map[string]any{"config": map[string]any{"model": "off"}})
	require.Equal(t, http.StatusConflict, status, out)
	require.Equal(t, "disabled", out["error"].(map[string]any)["code"])
	require.Equal(t, 1, b.revisionCount(t, a["id"].(string)))

	// A model whose provider is disabled is new use of that provider: 409 disabled.
	b.mustModel(t, "on-openai")
	p := b.patchModel(t, b.openai.Id, etagOf(b.openai), client.UpdateModelProviderRequest{Enabled: &off})
	require.Equal(t, http.StatusOK, p.StatusCode(), string(p.Body))
	b.refused(t, map[string]any{"model": "on-openai"}, http.StatusConflict, "disabled", "config.model")
}

func TestAgentsToolAndSubagentReferences(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	web := func(id any, ops ...any) map[string]any {
		return map[string]any{"model": "main", "tools": map[string]any{"web": map[string]any{"provider_id": id, "operations": ops}}}
	}
	b.refused(t, web("prv_01jd5v6w1q3yb8j8y3tn9z2k7h", "search"), http.StatusNotFound, "not_found", "config.tools.web.provider_id")
	b.refused(t, web(b.openai.Id, "search"), http.StatusBadRequest, "invalid_argument", "config.tools.web.provider_id")
	b.refused(t, web(b.web["id"], "search", "search"), http.StatusBadRequest, "invalid_argument", "config.tools.web.operations[1]")
	serper := b.create(t, "web", map[string]any{"type": "serper", "name": "Serper", "credential": map[string]any{"api_key": secretKey}})
	b.refused(t, web(serper["id"], "fetch"), http.StatusBadRequest, "invalid_argument", "config.tools.web.operations[0]")
	off := false
	status, out, _ := b.do(t, http.MethodPatch, "/api/v1/web-providers/"+serper["id"].(string), map[string]any{"enabled": off}, "If-Match", etag(serper))
	require.Equal(t, http.StatusOK, status, out)
	b.refused(t, web(serper["id"], "search"), http.StatusConflict, "disabled", "config.tools.web.provider_id")

	// Absent environment templates, memories and connections are 404 naming them.
	b.refused(t, map[string]any{"model": "main", "tools": map[string]any{"environment": map[string]any{"template_id": "et_01jd5v6w1q3yb8j8y3tn9z2k7h"}}},
		http.StatusNotFound, "not_found", "config.tools.environment.template_id")
	b.refused(t, map[string]any{"model": "main", "tools": map[string]any{"connections": []any{map[string]any{"connection_id": "con_01jd5v6w1q3yb8j8y3tn9z2k7h", "actions": []any{"GITHUB_CREATE_ISSUE"}}}}},
		http.StatusNotFound, "not_found", "config.tools.connections[0].connection_id")
	b.refused(t, map[string]any{"model": "main", "memories": []any{map[string]any{"memory_id": "mem_01jd5v6w1q3yb8j8y3tn9z2k7h"}}},
		http.StatusNotFound, "not_found", "config.memories[0].memory_id")

	// Subagents: absent, itself, and another workspace's.
	helper := b.mustAgent(t, "helper", map[string]any{"model": "main"})
	b.refused(t, map[string]any{"model": "main", "subagents": []any{map[string]any{"agent_id": helper["id"]}, map[string]any{"agent_id": "ap_01jd5v6w1q3yb8j8y3tn9z2k7h"}}},
		http.StatusNotFound, "not_found", "config.subagents[1].agent_id")
	b.refused(t, map[string]any{"model": "main", "subagents": []any{map[string]any{"agent_id": helper["id"]}, map[string]any{"agent_id": helper["id"]}}},
		http.StatusBadRequest, "invalid_argument", "config.subagents[1].agent_id")
	status, out = b.publish(t, "/api/v1/agents/"+helper["id"].(string), map[string]any{"config": map[string]any{"model": "main", "subagents": []any{map[string]any{"agent_id": helper["id"]}}}})
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, []string{"config.subagents[0].agent_id"}, fields(t, out), "not itself")
	boss := b.mustAgent(t, "boss", map[string]any{"model": "main", "subagents": []any{map[string]any{"agent_id": helper["id"]}}})
	require.NotEmpty(t, boss["id"])

	// Bounds and shapes.
	b.refused(t, map[string]any{"model": "main", "limits": map[string]any{"max_steps": 1001}}, http.StatusBadRequest, "invalid_argument", "config.limits.max_steps")
	b.refused(t, map[string]any{"model": "main", "instructions": "nul\u0000"}, http.StatusBadRequest, "invalid_argument", "config.instructions")
	b.refused(t, map[string]any{"model": "main", "unknown": 1}, http.StatusBadRequest, "invalid_argument", "config.unknown")
	b.refused(t, map[string]any{"instructions": "no model"}, http.StatusBadRequest, "invalid_argument", "config.model")
	require.Len(t, b.get(t, "/api/v1/agents")["items"], 2, "only helper and boss were stored")
}

func TestSkillsAndAgentSkillReferences(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	s := b.mustCreate(t, "skills", map[string]any{"name": "PDF forms", "labels": map[string]any{"kind": "docs"},
		"config": map[string]any{"instructions": "Fill PDF forms.", "metadata": map[string]any{"license": "MIT", "tags": []any{"pdf"}}}})
	require.Regexp(t, `^sk_[0-9a-z]{26}$`, s["id"])
	path := "/api/v1/skills/" + s["id"].(string)
	r1 := b.get(t, path+"/revisions/"+s["default_revision_id"].(string))
	require.Equal(t, map[string]any{"instructions": "Fill PDF forms.", "package": nil,
		"metadata": map[string]any{"license": "MIT", "tags": []any{"pdf"}}}, r1["config"])
	require.Equal(t, s["id"], r1["skill_id"])

	// Identical content (metadata keys in another order) creates nothing.
	status, same := b.publish(t, path, map[string]any{"config": map[string]any{"metadata": map[string]any{"tags": []any{"pdf"}, "license": "MIT"}, "instructions": "Fill PDF forms."}, "make_default": false})
	require.Equal(t, http.StatusCreated, status, same)
	require.Equal(t, r1["id"], same["id"])
	require.EqualValues(t, 1, b.get(t, path)["version"])
	status, r2 := b.publish(t, path, map[string]any{"config": map[string]any{"instructions": "Fill PDF forms, v2."}})
	require.Equal(t, http.StatusCreated, status, r2)
	require.Equal(t, map[string]any{}, r2["config"].(map[string]any)["metadata"])

	// The package: an absent asset is 404; an archive with a path out of the
	// package is 400; a safe one is published; a retired one is 409.
	withPackage := func(assetID any) map[string]any {
		return map[string]any{"config": map[string]any{"instructions": "x", "package": map[string]any{"asset_id": assetID}}}
	}
	status, out := b.publish(t, path, withPackage("as_01jd5v6w1q3yb8j8y3tn9z2k7h"))
	require.Equal(t, http.StatusNotFound, status, out)
	require.Equal(t, []string{"config.package.asset_id"}, fields(t, out))
	assets := &assetsBundle{h: b.h, admin: b.admin, api: b.api}
	evil := assets.upload(t, b.admin.APIKey, "evil.zip", "application/zip", bytes.NewReader(zipOf(t, "../etc/passwd")), -1)
	require.Equal(t, http.StatusCreated, evil.status)
	status, out = b.publish(t, path, withPackage(evil.asset.Id))
	require.Equal(t, http.StatusBadRequest, status, out)
	require.Equal(t, []string{"config.package.asset_id"}, fields(t, out))
	require.Contains(t, out["error"].(map[string]any)["details"].([]any)[0].(map[string]any)["reason"], "../etc/passwd")
	good := assets.upload(t, b.admin.APIKey, "pdf.zip", "application/zip", bytes.NewReader(zipOf(t, "SKILL.md", "scripts/fill.py")), -1)
	require.Equal(t, http.StatusCreated, good.status)
	status, out = b.publish(t, path, withPackage(good.asset.Id))
	require.Equal(t, http.StatusCreated, status, out)
	status, _, _ = b.do(t, http.MethodDelete, "/api/v1/assets/"+good.asset.Id, nil, "If-Match", `"`+good.asset.Id+`:1"`)
	require.Equal(t, http.StatusNoContent, status)
	status, out = b.publish(t, path, map[string]any{"config": map[string]any{"instructions": "y", "package": map[string]any{"asset_id": good.asset.Id}}})
	require.Equal(t, http.StatusConflict, status, out)
	require.Equal(t, []string{"config.package.asset_id"}, fields(t, out))

	// Agents reference skills, optionally pinned to one of the skill's revisions.
	ag := b.mustAgent(t, "filler", map[string]any{"model": "main", "skills": []any{map[string]any{"skill_id": s["id"]}}})
	path2 := "/api/v1/agents/" + ag["id"].(string)
	status, pinned := b.publish(t, path2, map[string]any{"config": map[string]any{"model": "main", "skills": []any{map[string]any{"skill_id": s["id"], "revision_id": r1["id"]}}}})
	require.Equal(t, http.StatusCreated, status, pinned)
	require.Equal(t, r1["id"], pinned["config"].(map[string]any)["skills"].([]any)[0].(map[string]any)["revision_id"])
	b.refused(t, map[string]any{"model": "main", "skills": []any{map[string]any{"skill_id": "sk_01jd5v6w1q3yb8j8y3tn9z2k7h"}}},
		http.StatusNotFound, "not_found", "config.skills[0].skill_id")
	// A revision of another head (here: an agent's) is not the skill's.
	b.refused(t, map[string]any{"model": "main", "skills": []any{map[string]any{"skill_id": s["id"], "revision_id": ag["default_revision_id"]}}},
		http.StatusNotFound, "not_found", "config.skills[0].revision_id")
	// An agent id is not a skill id.
	b.refused(t, map[string]any{"model": "main", "skills": []any{map[string]any{"skill_id": ag["id"]}}},
		http.StatusNotFound, "not_found", "config.skills[0].skill_id")
	// An archived skill cannot be newly referenced.
	cur := b.get(t, path)
	status, _, _ = b.do(t, http.MethodPost, path+"/archive", nil, "If-Match", etag(cur))
	require.Equal(t, http.StatusOK, status)
	b.refused(t, map[string]any{"model": "main", "skills": []any{map[string]any{"skill_id": s["id"]}}},
		http.StatusConflict, "conflict", "config.skills[0].skill_id")

	// Skill lists filter like agent lists; an agent id is not a skill.
	require.Equal(t, []string{"PDF forms"}, names(b.get(t, "/api/v1/skills?label=kind:docs&archived=true&q=pdf")))
	status, _, _ = b.do(t, http.MethodGet, "/api/v1/skills/"+ag["id"].(string), nil)
	require.Equal(t, http.StatusNotFound, status)
	status, _, _ = b.do(t, http.MethodGet, "/api/v1/agents/"+ag["id"].(string)+"/revisions/"+r1["id"].(string), nil)
	require.Equal(t, http.StatusNotFound, status, "a skill's revision is not the agent's")

	// Skill configuration bounds.
	for cfg, field := range map[string]map[string]any{
		"config.instructions": {"instructions": "   "},
		"config.metadata":     {"instructions": "x", "metadata": map[string]any{"a": map[string]any{"b": map[string]any{"c": map[string]any{"d": map[string]any{"e": map[string]any{"f": map[string]any{"g": map[string]any{"h": map[string]any{"i": 1}}}}}}}}}},
	} {
		status, out := b.publish(t, path, map[string]any{"config": field})
		require.Equal(t, http.StatusBadRequest, status, out)
		require.Contains(t, fields(t, out), cfg)
	}
}

func TestAgentsReferToTemplatesMemoriesAndConnections(t *testing.T) {
	t.Parallel()
	b := setupAgents(t)
	e2b := b.create(t, "environment", map[string]any{"type": "e2b", "name": "E2B", "credential": map[string]any{"api_key": secretKey}})
	status, tpl, _ := b.do(t, http.MethodPost, "/api/v1/environment-templates", map[string]any{
		"name": "sandbox", "environment_provider_id": e2b["id"], "config": map[string]any{"template": "base"}})
	require.Equal(t, http.StatusCreated, status, tpl)
	status, mem, _ := b.do(t, http.MethodPost, "/api/v1/memories", map[string]any{"name": "notes", "kind": "builtin"})
	require.Equal(t, http.StatusCreated, status, mem)
	composio := b.create(t, "connector", map[string]any{"type": "composio", "name": "Composio", "credential": map[string]any{"api_key": secretKey}})
	status, con, _ := b.do(t, http.MethodPost, "/api/v1/connections", map[string]any{
		"provider_id": composio["id"], "app": "github", "name": "GitHub", "config": map[string]any{"auth_config_id": "ac_oauth"}})
	require.Equal(t, http.StatusCreated, status, con)

	cfg := map[string]any{
		"model": "main",
		"tools": map[string]any{
			"environment": map[string]any{"template_id": tpl["id"]},
			"connections": []any{map[string]any{"connection_id": con["id"], "actions": []any{"GITHUB_CREATE_ISSUE"}}},
		},
		"memories": []any{map[string]any{"memory_id": mem["id"]}},
	}
	agent := b.mustAgent(t, "uses-everything", cfg)
	require.NotEmpty(t, agent["id"])

	// Disabled ones refuse new use, naming the reference.
	off := map[string]any{"enabled": false}
	status, out, _ := b.do(t, http.MethodPatch, "/api/v1/environment-templates/"+tpl["id"].(string), off, "If-Match", etag(tpl))
	require.Equal(t, http.StatusOK, status, out)
	b.refused(t, cfg, http.StatusConflict, "disabled", "config.tools.environment.template_id")
	delete(cfg["tools"].(map[string]any), "environment")
	status, out, _ = b.do(t, http.MethodPatch, "/api/v1/connections/"+con["id"].(string), off, "If-Match", etag(con))
	require.Equal(t, http.StatusOK, status, out)
	b.refused(t, cfg, http.StatusConflict, "disabled", "config.tools.connections[0].connection_id")

	// A memory an active agent uses is not deleted under it; once the agent is
	// archived it can be, and then it is gone.
	status, out, _ = b.do(t, http.MethodDelete, "/api/v1/memories/"+mem["id"].(string), nil, "If-Match", etag(mem))
	require.Equal(t, http.StatusConflict, status, out)
	require.Contains(t, out["error"].(map[string]any)["message"], agent["id"].(string))
	status, out, _ = b.do(t, http.MethodPost, "/api/v1/agents/"+agent["id"].(string)+"/archive", nil, "If-Match", etag(agent))
	require.Equal(t, http.StatusOK, status, out)
	status, out, _ = b.do(t, http.MethodDelete, "/api/v1/memories/"+mem["id"].(string), nil, "If-Match", etag(mem))
	require.Equal(t, http.StatusNoContent, status, out)
	b.refused(t, map[string]any{"model": "main", "memories": cfg["memories"]}, http.StatusNotFound, "not_found", "config.memories[0].memory_id")
}

// zipOf is a zip archive holding a small file at each name.
func zipOf(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range names {
		w, err := zw.Create(name)
		require.NoError(t, err)
		_, err = w.Write([]byte("content of " + name))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}
