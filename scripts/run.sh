#!/usr/bin/env bash
# `make run`: a development service on this machine. On first use it makes, under
# .dev/ (git-ignored): a configuration, a key ring and a file object store. At
# every start it starts the private PostgreSQL and Redis (installing them if
# missing), builds bin/svc and bin/demomodel, starts the demo model (a scripted
# OpenAI-compatible server, scripts/demomodel) on a free port, migrates, picks a
# free port for svc and runs `svc run` (role all) in the foreground. Ctrl-C
# stops svc, and the demo model with it.
#
# Settings (environment):
#   SVCDEV_DIR        state directory                       (default: <repo>/.dev)
#   SVCDEV_PORT       first port tried for svc              (default: 8080)
#   SVCDEV_DEMO_PORT  first port tried for the demo model   (default: 8090)
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
REPO=$PWD
DEV=${SVCDEV_DIR:-$REPO/.dev}

say() { printf 'run: %s\n' "$*" >&2; }
die() {
	say "$*"
	exit 1
}

command -v go >/dev/null || die "Go is required (https://go.dev/dl/)"
scripts/services.sh start postgres redis
eval "$(scripts/services.sh env)"

say "building bin/svc and bin/demomodel"
make --no-print-directory build >/dev/null
go build -o bin/demomodel ./scripts/demomodel

mkdir -p "$DEV/objects"
if [[ ! -f $DEV/keyring.json ]]; then
	bin/svc keyring generate --out "$DEV/keyring.json" >/dev/null
	say "made a key ring: $DEV/keyring.json (back it up with the database; see docs/operations.md)"
fi

# free_port prints the first free TCP port from $1 upward on 127.0.0.1.
free_port() {
	local p=$1
	while (echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
	echo "$p"
}

CONFIG=$DEV/config.toml
# LAYOUT marks a configuration this script made or brought up to date.
LAYOUT='# make run: layout 2'

# The endpoint policy of development: providers may call servers on this
# machine (the demo model, Ollama, LM Studio...) over plain http at any port.
# Production keeps the defaults, which refuse all of that.
DEV_POLICY='[endpoint_policy]
allow_http = true
allowed_prefixes = ["127.0.0.0/8", "::1/128"]
allow_any_port = true'

if [[ ! -f $CONFIG ]]; then
	cat >"$CONFIG" <<TOML
# Development configuration made by scripts/run.sh; edit freely, every key is in
# docs/configuration.md. Delete this file to have it made again.
$LAYOUT
#
# make run picks a free port at each start and passes server.listen and
# server.public_url as SVC_SERVER__LISTEN and SVC_SERVER__PUBLIC_URL, which win
# over this file (set SVCDEV_PORT to choose the first port it tries).

[database]
# This checkout's own database: its data is sealed with the key ring below.
url = "$SVCDEV_DATABASE_URL"

[redis]
url = "$SVCDEV_REDIS_URL"
key_prefix = "$SVCDEV_DATABASE:"

[object_store]
url = "file://$DEV/objects"

[encryption]
key_file = "$DEV/keyring.json"

[environments]
local_enabled = true

$DEV_POLICY

[log]
format = "text"
TOML
	say "made a configuration: $CONFIG (database $SVCDEV_DATABASE)"
elif ! grep -qxF "$LAYOUT" "$CONFIG" && grep -q '^# Development configuration made by scripts/run.sh' "$CONFIG"; then
	# A configuration made before ports were picked at each start: it froze
	# the first port chosen, and its endpoint policy kept providers from
	# reaching servers on this machine. Its database and key ring stay.
	cp -p "$CONFIG" "$CONFIG.bak"
	sed -i -e '/^listen = "127\.0\.0\.1:[0-9]*"$/d' -e '/^public_url = "http:\/\/127\.0\.0\.1:[0-9]*"$/d' \
		-e "s/^# docs\/configuration.md. Delete this file to have it made again.\$/&\n$LAYOUT/" "$CONFIG"
	grep -qxF "$LAYOUT" "$CONFIG" || printf '%s\n' "$LAYOUT" >>"$CONFIG"
	if ! grep -q '^\[endpoint_policy\]' "$CONFIG"; then
		printf '\n%s\n' "$DEV_POLICY" >>"$CONFIG"
	fi
	say "brought $CONFIG up to date (the old one is $CONFIG.bak): make run now picks a free port at"
	say "each start instead of the one written there, and the endpoint policy lets providers reach this machine"
fi

# Only this configuration applies: SVC_ variables of the caller's shell would override it.
while IFS= read -r var; do unset "$var"; done < <(env | sed -n 's/^\(SVC_[A-Z0-9_]*\)=.*/\1/p')

SVC_LOG__LEVEL=warn bin/svc --config "$CONFIG" migrate >/dev/null

# The demo model first, so that svc's port is chosen among the ports still free.
demo_port=$(free_port "${SVCDEV_DEMO_PORT:-8090}")
bin/demomodel -addr "127.0.0.1:$demo_port" >"$DEV/demomodel.url" 2>"$DEV/demomodel.log" &
demo_pid=$!
for _ in $(seq 100); do
	[[ -s $DEV/demomodel.url ]] && break
	kill -0 "$demo_pid" 2>/dev/null || break
	sleep 0.1
done
demo=$(head -1 "$DEV/demomodel.url" 2>/dev/null || true)
if [[ -z $demo ]]; then
	kill "$demo_pid" 2>/dev/null || true
	tail -n 5 "$DEV/demomodel.log" >&2 || true
	die "the demo model did not start (log: $DEV/demomodel.log)"
fi
# The demo model stops when svc does: this shell becomes svc (exec below), and
# the watcher ends the demo model once that process is gone.
svc_pid=$$
(
	trap '' INT
	while kill -0 "$svc_pid" 2>/dev/null; do sleep 0.5; done
	kill "$demo_pid" 2>/dev/null || true
) </dev/null >/dev/null 2>&1 &

# The database the configuration names (an older file keeps its own).
database=$(sed -n 's|^url = "postgres[a-z]*://[^"]*/\([A-Za-z0-9_]*\)?[^"]*"$|\1|p' "$CONFIG" | head -1)

port=$(free_port "${SVCDEV_PORT:-8080}")
base="http://127.0.0.1:$port"
export SVC_SERVER__LISTEN="127.0.0.1:$port" SVC_SERVER__PUBLIC_URL="$base"
cat >&2 <<EOF2

  svc is starting on $base
    API page      $base/api/v1/docs
    console       $base/
    contract      $base/api/v1/openapi.json
    health        $base/healthz   $base/readyz
    configuration $CONFIG (database ${database:-named there})

  the demo model (scripted, offline) answers on $demo as model svc-demo
  (log: $DEV/demomodel.log). In another terminal, from $REPO, make
  an agent on it as README.md's "Try it" does (needs curl and jq):

    export BASE=$base DEMO=$demo
    BOOT=\$(printf '%s\n' 'a long development password' |
      bin/svc --config $CONFIG bootstrap --email you@example.com --password-stdin)
    export KEY=\$(jq -r .api_key <<<"\$BOOT") WS=\$(jq -r .workspace_id <<<"\$BOOT")
    api() { curl -sS -w '\n' -H "Authorization: Bearer \$KEY" -H 'Content-Type: application/json' "\$@"; }
    export PRV=\$(api -d '{"type":"openai_compatible","name":"demo","config":{"base_url":"'"\$DEMO"'"}}' \\
      "\$BASE/api/v1/model-providers" | jq -r '.id // error(.)')
    api -d '{"key":"demo","provider_id":"'"\$PRV"'","api":"chat_completions","model":"svc-demo"}' "\$BASE/api/v1/models"
    export MEM=\$(api -d '{"name":"notes","kind":"builtin"}' "\$BASE/api/v1/memories" | jq -r '.id // error(.)')
    export AGENT=\$(api -d '{"name":"helper","labels":{"team":"demo"},"config":{"model":"demo","instructions":"Answer briefly.","memories":[{"memory_id":"'"\$MEM"'"}]}}' \\
      "\$BASE/api/v1/agents" | jq -r '.id // error(.)')
    R=\$(api -d '{"agent_id":"'"\$AGENT"'","input":"Use memory_write to note \\"the demo model runs offline\\"."}' "\$BASE/api/v1/runs")
    export RUN=\$(jq -r '.id // error(.)' <<<"\$R") TH=\$(jq -r .thread_id <<<"\$R")
    curl -sN --max-time 5 -H "Authorization: Bearer \$KEY" "\$BASE/api/v1/threads/\$TH/stream"

EOF2
exec bin/svc --config "$CONFIG" run --role all
