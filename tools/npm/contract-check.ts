// Compiled, never run, by scripts/lint-contract.sh against the types
// openapi-typescript generates from openapi/openapi.yaml with its default
// options (.generated/api.d.ts), used through openapi-fetch. It stops
// compiling when the contract no longer gives generated clients precise
// request types: creates that need no member the service defaults, changes
// that cannot be sent without If-Match, assets sent and read as bytes.
import createClient from "openapi-fetch";
import type { components, paths } from "./.generated/api";

const api = createClient<paths>({ baseUrl: "http://127.0.0.1:8080" });

type Asset = components["schemas"]["Asset"];

// Creates leave out every member that has a default (stated as "Default: ..."
// in the contract, filled in by the service).
export async function creates(): Promise<void> {
  await api.POST("/api/v1/models", { body: { key: "main", provider_id: "prv_x", api: "chat_completions", model: "gpt-4.1-mini" } });
  await api.POST("/api/v1/connections", { body: { provider_id: "prv_x", app: "github", name: "GitHub" } });
  await api.POST("/api/v1/environment-templates", { body: { name: "sandbox", environment_provider_id: "prv_x", config: {} } });
  await api.POST("/api/v1/subscriptions", { body: { url: "https://hooks.example.com/svc", event_types: ["run.succeeded"] } });
  await api.POST("/api/v1/agents", { body: { name: "triage", config: { model: "main" } } });
  await api.POST("/api/v1/agents/{agent_id}/revisions", {
    params: { path: { agent_id: "ap_x" } },
    body: { config: { model: "main", tools: {}, limits: {}, context: {}, tool_policy: {} } },
  });
  await api.POST("/api/v1/threads/{thread_id}/inputs", { params: { path: { thread_id: "th_x" } }, body: { content: "Hello" } });
  // Query parameters with a default (limit) stay optional.
  await api.GET("/api/v1/models");
}

// A change carries the ETag it was read with; without If-Match it does not compile.
export async function changes(etag: string): Promise<void> {
  await api.PATCH("/api/v1/models/{key}", { params: { path: { key: "main" }, header: { "If-Match": etag } }, body: { enabled: false } });
  await api.DELETE("/api/v1/assets/{asset_id}", { params: { path: { asset_id: "as_x" }, header: { "If-Match": etag } } });
  // @ts-expect-error If-Match is required on a change.
  await api.PATCH("/api/v1/models/{key}", { params: { path: { key: "main" } }, body: { enabled: false } });
  // @ts-expect-error If-Match is required on a change.
  await api.DELETE("/api/v1/assets/{asset_id}", { params: { path: { asset_id: "as_x" } } });
  // @ts-expect-error If-Match is required on a change.
  await api.POST("/api/v1/agents/{agent_id}/archive", { params: { path: { agent_id: "ap_x" } } });
}

// An upload's body is the bytes as they are (a Blob or a Uint8Array), sent
// without the default JSON serializer and with their own media type; a
// download is read as bytes.
export async function assets(bytes: Uint8Array<ArrayBuffer>): Promise<Blob | undefined> {
  const blob = new Blob([bytes], { type: "image/png" });
  const up = await api.POST("/api/v1/assets", {
    params: { query: { name: "logo.png" } },
    body: blob,
    bodySerializer: (b) => b,
    headers: { "Content-Type": blob.type },
  });
  const asset: Asset | undefined = up.data;
  await api.POST("/api/v1/assets", {
    params: { query: { name: "raw.bin" } },
    body: bytes,
    bodySerializer: (b) => b,
    headers: { "Content-Type": "application/octet-stream" },
  });
  const down = await api.GET("/api/v1/assets/{asset_id}/content", {
    params: { path: { asset_id: asset?.id ?? "as_x" } },
    parseAs: "blob",
  });
  return down.data;
}
