#!/usr/bin/env bash
# Shows the plan of an environment-template list with label selectors over a
# large workspace (docs/performance.md, "Label selectors"). It creates a
# throwaway database on the PostgreSQL of DATABASE_URL (default: the test
# cluster of scripts/services.sh), applies the migrations, seeds TEMPLATES
# templates (default 50000) with five labels each in one workspace plus as many
# in each of OTHERS other workspaces (default 1) that use the same label
# vocabulary, and prints EXPLAIN (ANALYZE, BUFFERS) of the service's
# exact query (EnvironmentTemplateListByLabels) with three selectors, as a
# custom plan and as the generic plan of a prepared statement. The database is
# dropped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -z "${DATABASE_URL:-}" ]]; then
	eval "$(scripts/services.sh env)"
	DATABASE_URL=$TEST_DATABASE_URL
fi
TEMPLATES=${TEMPLATES:-50000}
OTHERS=${OTHERS:-1}
db="svc_explain_labels_$$"
admin_url=$DATABASE_URL
# Swap the database name of the URL (postgres://user@host:port/NAME?params).
db_url=$(sed -E "s#(postgres(ql)?://[^/]+/)[^?]*#\1${db}#" <<<"$admin_url")

cleanup() { psql -X -q "$admin_url" -c "DROP DATABASE IF EXISTS ${db}" >/dev/null 2>&1 || true; }
trap cleanup EXIT
psql -X -q "$admin_url" -c "CREATE DATABASE ${db}" >/dev/null

# The Up part of each goose migration, in order.
for f in sql/migrations/*.sql; do
	sed -n '/^-- +goose Up/,/^-- +goose Down/p' "$f"
done | psql -X -q -v ON_ERROR_STOP=1 "$db_url" >/dev/null

psql -X -q -v ON_ERROR_STOP=1 "$db_url" <<SQL >/dev/null
INSERT INTO organization (id, name) VALUES ('org_x', 'x');
INSERT INTO principal (id, kind, display_name) VALUES ('pri_x', 'service', 'x');
CREATE TEMP TABLE ws (id text, prv text, tag text);
INSERT INTO ws VALUES ('ws_big', 'prv_big', 'b');
INSERT INTO ws SELECT 'ws_other' || n, 'prv_other' || n, 'a' || n FROM generate_series(1, ${OTHERS}) n;
INSERT INTO workspace (id, organization_id, name, created_by_id, updated_by_id)
SELECT id, 'org_x', id, 'pri_x', 'pri_x' FROM ws;
INSERT INTO provider (id, workspace_id, kind, type, name, created_by_id, updated_by_id)
SELECT prv, id, 'environment', 'docker', 'd', 'pri_x', 'pri_x' FROM ws;
SELECT setseed(0.42);
-- Five independent labels: team (50 values), env (4), region (10), tier (5),
-- app (1000). Ids sort by creation like real ones.
INSERT INTO environment_template (id, workspace_id, provider_id, name, description, config, labels, enabled,
                                  created_by_id, updated_by_id)
SELECT 'et_' || w.tag || '_' || lpad(i::text, 20, '0'), w.id, w.prv, 'template ' || i, 'description of template ' || i,
       '{"image":"python:3.13-slim"}',
       jsonb_build_object('team', 'team-' || floor(random() * 50)::int,
                          'env', (ARRAY['prod', 'staging', 'dev', 'test'])[1 + floor(random() * 4)::int],
                          'region', 'region-' || floor(random() * 10)::int,
                          'tier', 'tier-' || floor(random() * 5)::int,
                          'app', 'app-' || floor(random() * 1000)::int),
       random() > 0.1, 'pri_x', 'pri_x'
FROM generate_series(1, ${TEMPLATES}) i
CROSS JOIN ws AS w;
VACUUM ANALYZE environment_template;
SQL

query=$(cat <<'SQL'
SELECT id, workspace_id, provider_id, name, description, config, idle_stop_seconds, idle_delete_seconds, labels, enabled, version, created_by_id, updated_by_id, created_at, updated_at FROM environment_template
WHERE workspace_id = $1 AND id < $2
  AND (labels || jsonb_object(ARRAY['', workspace_id])) @> $3::jsonb
  AND ($4::boolean IS NULL OR enabled = $4::boolean)
  AND ($5::text = '' OR name ILIKE $5::text OR description ILIKE $5::text)
ORDER BY id DESC
LIMIT $6
SQL
)
args="'ws_big', E'\\uffff', '{\"\":\"ws_big\",\"team\":\"team-7\",\"env\":\"prod\",\"region\":\"region-3\"}', NULL, '', 50"
wide="'ws_big', E'\\uffff', '{\"\":\"ws_big\",\"env\":\"prod\"}', NULL, '', 50"

echo "# ${TEMPLATES} templates in the workspace and in each of ${OTHERS} others; $(psql -X -At "$db_url" -c 'SHOW server_version')"
echo
echo "## label=team:team-7&label=env:prod&label=region:region-3 (custom plan)"
psql -X -q "$db_url" <<SQL
PREPARE list(text, text, jsonb, boolean, text, int) AS ${query};
SET plan_cache_mode = force_custom_plan;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE list(${args});
SQL
echo "## the same, generic plan of the prepared statement"
psql -X -q "$db_url" <<SQL
PREPARE list(text, text, jsonb, boolean, text, int) AS ${query};
SET plan_cache_mode = force_generic_plan;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE list(${args});
SQL
echo "## label=env:prod (a quarter of the workspace; custom plan)"
psql -X -q "$db_url" <<SQL
PREPARE list(text, text, jsonb, boolean, text, int) AS ${query};
SET plan_cache_mode = force_custom_plan;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE list(${wide});
SQL
echo "## the plan the default plan cache (plan_cache_mode=auto, as pgx's statement cache meets it) uses after 10 executions"
{
	echo "PREPARE list(text, text, jsonb, boolean, text, int) AS ${query};"
	for _ in $(seq 10); do echo "EXECUTE list(${args});"; done
	echo "EXPLAIN (COSTS OFF) EXECUTE list(${args});"
} | psql -X -q "$db_url" | sed -n '/QUERY PLAN/,$p'
echo "## 500 executions of the three-selector list in one session (default plan cache, as pgx uses it)"
{
	echo "PREPARE list(text, text, jsonb, boolean, text, int) AS ${query};"
	for _ in $(seq 500); do echo "EXECUTE list(${args});"; done
} >"/tmp/${db}.sql"
start=$(date +%s%N)
psql -X -q "$db_url" -f "/tmp/${db}.sql" >/dev/null
end=$(date +%s%N)
rm -f "/tmp/${db}.sql"
echo "mean $(( (end - start) / 500000 )) us per list (50 rows, including psql's round trip)"
