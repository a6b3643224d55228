#!/usr/bin/env bash
# `make run`: a development service on this machine. On first use it makes, under
# .dev/ (git-ignored): a configuration, a key ring and a file object store; it
# starts the private PostgreSQL and Redis (installing them if missing), migrates,
# and runs `svc run` (role all) in the foreground. Ctrl-C stops it.
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
REPO=$PWD
DEV=${SVCDEV_DIR:-$REPO/.dev}

say() { printf 'run: %s\n' "$*" >&2; }

command -v go >/dev/null || { say "Go is required (https://go.dev/dl/)"; exit 1; }
scripts/services.sh start postgres redis
eval "$(scripts/services.sh env)"

say "building bin/svc"
make --no-print-directory build >/dev/null

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
if [[ ! -f $CONFIG ]]; then
	port=$(free_port "${SVCDEV_PORT:-8080}")
	cat >"$CONFIG" <<TOML
# Development configuration made by scripts/run.sh; edit freely, every key is in
# docs/configuration.md. Delete this file to have it made again.

[server]
listen = "127.0.0.1:$port"
public_url = "http://127.0.0.1:$port"

[database]
url = "$SVCDEV_DATABASE_URL"

[redis]
url = "$SVCDEV_REDIS_URL"

[object_store]
url = "file://$DEV/objects"

[encryption]
key_file = "$DEV/keyring.json"

[environments]
local_enabled = true

[log]
format = "text"
TOML
	say "made a configuration: $CONFIG"
fi

# Only this configuration applies: SVC_ variables of the caller's shell would override it.
while IFS= read -r var; do unset "$var"; done < <(env | sed -n 's/^\(SVC_[A-Z0-9_]*\)=.*/\1/p')

bin/svc --config "$CONFIG" migrate >/dev/null
listen=$(sed -n 's/^listen = "\(.*\)"/\1/p' "$CONFIG" | head -1)
base="http://$listen"
cat >&2 <<EOF2

  svc is starting on $base
    API page      $base/api/v1/docs
    contract      $base/api/v1/openapi.json
    health        $base/healthz   $base/readyz
    configuration $CONFIG

EOF2
exec bin/svc --config "$CONFIG" run --role all
