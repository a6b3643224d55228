#!/usr/bin/env bash
# `make bench`: measure svc against this machine's own ceilings, in one run.
#
# It installs what is missing (wrk, hyperfine; PostgreSQL and Redis through
# scripts/services.sh, whose server package also brings pgbench), starts the
# private services, builds svc and scripts/benchserver into a temporary
# directory, makes a throwaway database, key ring and configuration there, and
# measures:
#   1. ceilings: pgbench -S (select-only TPS), wrk against a trivial net/http
#      handler, and the time to start a small Go program and to run psql once;
#   2. wrk against /healthz and /readyz of `svc run --role all`;
#   3. hyperfine: `svc --version` and `svc migrate --check`;
#   4. `svc run` start to the first 200 from /readyz (median of 5 starts);
#   5. resident memory of an idle `all` process, and after the load.
# The table goes to stdout and to bin/bench-results.md; progress goes to stderr.
# Everything it starts is stopped on exit, and the throwaway databases dropped;
# only the shared services of scripts/services.sh keep running. Loads are on
# loopback and bounded in time. See docs/performance.md.
#
# Settings (environment):
#   BENCH_DURATION     measured wrk run per target        (default: 10s)
#   BENCH_WARMUP       unmeasured wrk run before it        (default: 2s)
#   BENCH_LIGHT        light-load wrk run (-t1 -c4)         (default: 5s; 0 skips it)
#   BENCH_THREADS      wrk threads                          (default: 2)
#   BENCH_CONNECTIONS  wrk connections                      (default: 64)
#   BENCH_PGBENCH_SECONDS  pgbench -S duration              (default: 10)
#   BENCH_STARTS       starts for the ready time            (default: 5)
#   BENCH_IDLE_SECONDS idle time before reading RSS         (default: 3)
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."
REPO=$PWD

DURATION=${BENCH_DURATION:-10s}
WARMUP=${BENCH_WARMUP:-2s}
LIGHT=${BENCH_LIGHT:-5s}
THREADS=${BENCH_THREADS:-2}
CONNS=${BENCH_CONNECTIONS:-64}
PGBENCH_SECONDS=${BENCH_PGBENCH_SECONDS:-10}
STARTS=${BENCH_STARTS:-5}
IDLE_SECONDS=${BENCH_IDLE_SECONDS:-3}
RESULTS=$REPO/bin/bench-results.md

# Targets.
T_RPS=20000    # /healthz requests/s, at least
T_ME_RPS=8000  # authenticated GET /api/v1/me requests/s, at least
T_ME_P99_MS=10 # its p99 latency at that rate, below
T_ME_RATIO=0.3 # its requests/s as a share of pgbench -S TPS, at least
T_BOOT_MS=1000 # svc bootstrap, below
T_P99_MS=5     # /healthz p99 latency, below
T_RATIO=0.5    # /healthz requests/s over the trivial handler's, at least
T_CMD_MS=100   # mean of svc --version and svc migrate --check, below
T_READY_MS=1000 # median start to first 200 from /readyz, below
T_RSS_MIB=40   # idle RSS of an `all` process, below

say() { printf 'bench: %s\n' "$*" >&2; }
die() {
	say "$*"
	exit 1
}

# ---------------------------------------------------------------------------
# Cleanup: every process this script starts is recorded in PIDS and stopped on
# exit (SIGTERM, then SIGKILL after 10 s); throwaway databases are dropped.

WORK=
PIDS=()
DBS=()
PSQL=
ADMIN_URL=

stop_pid() {
	local pid=$1 i
	kill -TERM "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	local keep=() p
	for p in "${PIDS[@]}"; do [[ $p == "$pid" ]] || keep+=("$p"); done
	PIDS=("${keep[@]}")
}

cleanup() {
	local rc=$? pid db
	set +e
	for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
	if [[ -n $PSQL && -n $ADMIN_URL ]]; then
		for db in "${DBS[@]}"; do
			"$PSQL" -X -q "$ADMIN_URL" -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null 2>&1 ||
				say "could not drop database $db"
		done
	fi
	[[ -n $WORK && -d $WORK ]] && rm -rf -- "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_bg LOG CMD... starts CMD in the background with stdout and stderr in LOG
# and records it; BG_PID is its pid. setpriv --pdeathsig makes the kernel kill
# it should this script die without running its trap (SIGKILL).
start_bg() {
	local log=$1
	shift
	local pre=()
	if setpriv --help 2>/dev/null | grep -q -- --pdeathsig; then pre=(setpriv --pdeathsig KILL --); fi
	"${pre[@]}" "$@" >"$log" 2>&1 </dev/null &
	BG_PID=$!
	PIDS+=("$BG_PID")
}

# wait_line PID LOG REGEX SECONDS waits until LOG has a line matching REGEX.
wait_line() {
	local pid=$1 log=$2 re=$3 secs=$4 i
	for ((i = 0; i < secs * 50; i++)); do
		grep -q -E -- "$re" "$log" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || {
			tail -n 20 "$log" >&2
			die "process $pid exited before logging /$re/"
		}
		sleep 0.02
	done
	tail -n 20 "$log" >&2
	die "no line matching /$re/ in $log after ${secs}s"
}

# ---------------------------------------------------------------------------
# Installation

IS_ROOT=0
[[ $(id -u) -eq 0 ]] && IS_ROOT=1
APT_UPDATED=0

apt_install() {
	local sudo=()
	if ((!IS_ROOT)); then
		command -v sudo >/dev/null 2>&1 || die "$* not installed; run as root or install: apt-get install $*"
		sudo=(sudo)
	fi
	local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300)
	local out
	out=$(mktemp -t bench-apt.XXXXXX)
	say "installing $* (apt-get; log: $out)"
	if ((!APT_UPDATED)); then
		"${apt[@]}" update </dev/null >"$out" 2>&1 || {
			tail -n 20 "$out" >&2
			die "apt-get update failed"
		}
		APT_UPDATED=1
	fi
	"${apt[@]}" install -y --no-install-recommends "$@" </dev/null >>"$out" 2>&1 || {
		tail -n 20 "$out" >&2
		die "apt-get install $* failed"
	}
	rm -f -- "$out"
}

# pg_tool NAME prints the newest /usr/lib/postgresql/*/bin/NAME. On Debian 12
# pgbench is in the server package (postgresql-15), not in postgresql-client-15;
# postgresql-contrib depends on that server package.
pg_tool() {
	local d
	for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -Vr); do
		[[ -x $d/$1 ]] && {
			printf '%s\n' "$d/$1"
			return 0
		}
	done
	return 0
}

command -v go >/dev/null 2>&1 || die "Go is required (https://go.dev/dl/)"
need=()
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v hyperfine >/dev/null 2>&1 || need+=(hyperfine)
((${#need[@]} == 0)) || apt_install "${need[@]}"

scripts/services.sh start postgres redis
eval "$(scripts/services.sh env)"
ADMIN_URL=$TEST_DATABASE_URL
REDIS_URL=$SVCDEV_REDIS_URL
[[ -n $(pg_tool pgbench) ]] || apt_install postgresql-contrib
PGBENCH=$(pg_tool pgbench)
PSQL=$(pg_tool psql)
[[ -n $PGBENCH && -n $PSQL ]] || die "pgbench or psql not found under /usr/lib/postgresql/*/bin"
for t in wrk hyperfine; do command -v "$t" >/dev/null 2>&1 || die "$t still missing after installing"; done

# Only the configuration file below applies to svc: the caller's SVC_ variables
# would override it.
while IFS= read -r var; do unset "$var"; done < <(env | sed -n 's/^\(SVC_[A-Za-z0-9_]*\)=.*/\1/p')
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGPASSWORD PGPASSFILE \
	PGSERVICE PGSERVICEFILE PGOPTIONS PGSSLMODE

# ---------------------------------------------------------------------------
# Build and throwaway setup

# Leftovers of a run that was killed without running its trap (SIGKILL): its
# servers died with it (setpriv --pdeathsig), its databases and directory did not.
# Their names carry the pid of the run; remove those whose run is gone.
remove_stale() {
	local db d pid
	while IFS= read -r db; do
		pid=${db##*_}
		kill -0 "$pid" 2>/dev/null && continue
		say "dropping database $db, left by an earlier run"
		"$PSQL" -X -q "$ADMIN_URL" -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null || true
	done < <("$PSQL" -X -At "$ADMIN_URL" -c "SELECT datname FROM pg_database WHERE datname ~ '^svc_bench_(pgbench_)?[0-9]+\$'")
	for d in "${TMPDIR:-/tmp}"/svc-bench.*.*; do
		[[ -d $d && -O $d ]] || continue
		pid=${d#*/svc-bench.}
		pid=${pid%%.*}
		[[ $pid =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null && rm -rf -- "$d"
	done
	return 0
}
remove_stale

WORK=$(mktemp -d -t "svc-bench.$$.XXXXXX")
VERSION=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
say "building svc $VERSION and scripts/benchserver"
go build -ldflags "-X github.com/svcdev/svc/internal/buildinfo.Version=$VERSION" -o "$WORK/svc" ./cmd/svc
go build -o "$WORK/benchserver" ./scripts/benchserver
SVC=$WORK/svc
BENCHSERVER=$WORK/benchserver

# db_url NAME is ADMIN_URL with its database replaced by NAME.
db_url() { printf '%s\n' "$ADMIN_URL" | sed -E "s#^([^/]*//[^/]*)/[^?]*#\1/$1#"; }

new_db() {
	local name=$1
	"$PSQL" -X -q -v ON_ERROR_STOP=1 "$ADMIN_URL" -c "DROP DATABASE IF EXISTS \"$name\" WITH (FORCE)" -c "CREATE DATABASE \"$name\"" >/dev/null
	DBS+=("$name")
}

SVC_DB=svc_bench_$$
PGB_DB=svc_bench_pgbench_$$
new_db "$SVC_DB"
new_db "$PGB_DB"

"$SVC" keyring generate --out "$WORK/keyring.json" >/dev/null
mkdir -p "$WORK/objects"
CONFIG=$WORK/config.toml
cat >"$CONFIG" <<TOML
# Throwaway configuration of scripts/bench.sh.
[server]
listen = "127.0.0.1:0"

[database]
url = "$(db_url "$SVC_DB")"

[redis]
url = "$REDIS_URL"
key_prefix = "svc-bench-$$:"

[object_store]
url = "file://$WORK/objects"

[encryption]
key_file = "$WORK/keyring.json"

[limits]
# The per-key limiter stays on (its Redis round trip is part of the cost) but
# never refuses during the load.
api_requests_per_key_per_minute = 1000000000

[log]
level = "info"
format = "json"
TOML
"$SVC" --config "$CONFIG" migrate >/dev/null

# The first administrator and its API key, timed (target: under 1 s).
say "bootstrap (timed)"
BOOT_START=$(date +%s%N)
printf 'bench-password-123\n' | "$SVC" --config "$CONFIG" bootstrap --email bench@example.com --password-stdin >"$WORK/bootstrap.json"
BOOT_MS=$(( ($(date +%s%N) - BOOT_START) / 1000000 ))
API_KEY=$(sed -n 's/.*"api_key":"\([^"]*\)".*/\1/p' "$WORK/bootstrap.json")
[[ -n $API_KEY ]] || die "bootstrap printed no api_key: $(cat "$WORK/bootstrap.json")"

# ---------------------------------------------------------------------------
# Helpers for the measurements

# fcmp A OP B compares decimals (awk).
fcmp() { awk -v a="$1" -v b="$3" -v op="$2" 'BEGIN { if (op == "<") r = a < b; else r = a >= b; exit !r }'; }
verdict() { if fcmp "$@"; then echo PASS; else echo FAIL; fi; }
fmt() { awk -v v="$1" -v f="${2:-%.1f}" 'BEGIN { printf f, v }'; }

# wrk_measure NAME URL [THREADS CONNS DURATION WARMUP]: a warm-up, then the
# measured run with --latency. Sets W_RPS, W_P50, W_P99 (ms), W_REQS and W_ERRS
# (non-2xx/3xx responses plus socket errors).
wrk_measure() {
	local name=$1 url=$2 t=${3:-$THREADS} c=${4:-$CONNS} d=${5:-$DURATION} w=${6:-$WARMUP}
	local out=$WORK/wrk-$name.txt
	say "wrk $name: $url (-t$t -c$c, warm-up $w, measured $d)"
	local script=()
	[[ -z ${WRK_SCRIPT:-} ]] || script=(-s "$WRK_SCRIPT")
	[[ -z ${WRK_HEADER:-} ]] || script+=(-H "$WRK_HEADER")
	wrk -t"$t" -c"$c" -d"$w" "${script[@]}" "$url" >/dev/null
	wrk -t"$t" -c"$c" -d"$d" --latency "${script[@]}" "$url" >"$out"
	sed 's/^/    /' "$out" >&2
	read -r W_RPS W_P50 W_P99 W_REQS W_ERRS < <(awk '
		function ms(v, n) {
			n = v + 0
			if (v ~ /us$/) return n / 1000
			if (v ~ /ms$/) return n
			if (v ~ /m$/) return n * 60000
			if (v ~ /s$/) return n * 1000
			if (v ~ /h$/) return n * 3600000
			return n
		}
		/^Requests\/sec:/ { rps = $2 }
		$1 == "50%" { p50 = ms($2) }
		$1 == "99%" { p99 = ms($2) }
		/ requests in / { reqs = $1 }
		/Non-2xx or 3xx responses:/ { errs += $NF }
		/Socket errors:/ { gsub(/,/, ""); errs += $4 + $6 + $8 + $10 }
		END { printf "%s %s %s %s %d\n", rps + 0, p50 + 0, p99 + 0, reqs + 0, errs }
	' "$out")
}

# rate_measure NAME URL RPS: latency at a paced rate rather than at saturation.
# wrk's Lua delay() hook makes each connection pause 1 ms after every response
# (about 2 ms a cycle with the event loop's timer granularity: about 500
# requests/s per connection), so RPS/500 connections offer about RPS requests/s.
# wrk times each request from its write to its response, so pauses do not count.
# Sets W_* like wrk_measure; the achieved rate is reported with the latency.
# (A closed loop at saturation, as in wrk_measure, measures queueing instead.)
rate_measure() {
	local name=$1 url=$2 rps=$3
	printf 'function delay() return 1 end\n' >"$WORK/pace.lua"
	WRK_SCRIPT=$WORK/pace.lua wrk_measure "$name" "$url" "$THREADS" $((rps / 500))
}

# hf NAME CMD...: hyperfine (no shell); sets H_MEAN and H_MAX in ms.
hf() {
	local name=$1
	shift
	local csv=$WORK/hf-$name.csv
	local cmd
	cmd=$(printf '%q ' "$@")
	say "hyperfine: $cmd"
	hyperfine --shell=none --warmup 3 --min-runs 20 --style basic --export-csv "$csv" "${cmd% }" 2>&1 | sed 's/^/    /' >&2
	read -r H_MEAN H_MAX < <(awk -F, 'NR == 2 { printf "%.1f %.1f\n", $2 * 1000, $8 * 1000 }' "$csv")
}

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

ROWS=()
row() { ROWS+=("$(printf '| %s | %s | %s | %s |' "$1" "$2" "$3" "$4")"); }

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED_AT=$(date -u '+%Y-%m-%d %H:%M UTC')
say "load average before: $LOAD_BEFORE"

# ---------------------------------------------------------------------------
# 1a. PostgreSQL ceiling: pgbench select-only

PGB_URL=$(db_url "$PGB_DB")
say "pgbench -i -s 1, then -S -c 4 -j 2 -T $PGBENCH_SECONDS"
"$PGBENCH" -i -s 1 -q "$PGB_URL" >"$WORK/pgbench-init.txt" 2>&1 || {
	cat "$WORK/pgbench-init.txt" >&2
	die "pgbench -i failed"
}
"$PGBENCH" -S -c 4 -j 2 -T "$PGBENCH_SECONDS" "$PGB_URL" >"$WORK/pgbench.txt" 2>&1 || {
	cat "$WORK/pgbench.txt" >&2
	die "pgbench -S failed"
}
sed 's/^/    /' "$WORK/pgbench.txt" >&2
PGB_TPS=$(awk '/^tps = / { print $3; exit }' "$WORK/pgbench.txt")
PGB_LAT=$(awk '/^latency average/ { print $4; exit }' "$WORK/pgbench.txt")

# ---------------------------------------------------------------------------
# 1c and 3. Command latency, with the floors of this machine: a Go program that
# exits at once, and psql connecting and running one query (what migrate --check
# must do at least).

hf noop "$BENCHSERVER" noop
GO_MEAN=$H_MEAN GO_MAX=$H_MAX
hf psql "$PSQL" -X -q -At -c 'SELECT 1' "$(db_url "$SVC_DB")"
PSQL_MEAN=$H_MEAN PSQL_MAX=$H_MAX
hf version "$SVC" --version
V_MEAN=$H_MEAN V_MAX=$H_MAX
hf check "$SVC" --config "$CONFIG" migrate --check
C_MEAN=$H_MEAN C_MAX=$H_MAX

# ---------------------------------------------------------------------------
# 4. Ready time on an up-to-date schema

say "ready time: $STARTS starts of svc run --role all, polling /readyz every 5 ms"
READY_LINE=$("$BENCHSERVER" startup -n "$STARTS" -interval 5ms -- "$SVC" --config "$CONFIG" run --role all)
READY_MED=$(sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' <<<"$READY_LINE")
READY_MIN=$(sed -n 's/.*min_ms=\([0-9.]*\).*/\1/p' <<<"$READY_LINE")
READY_MAX=$(sed -n 's/.*max_ms=\([0-9.]*\).*/\1/p' <<<"$READY_LINE")
READY_LOGGED=$(sed -n 's/.*startup_ms_median=\([0-9.]*\).*/\1/p' <<<"$READY_LINE")

# ---------------------------------------------------------------------------
# 1b. HTTP ceiling: a trivial net/http handler

start_bg "$WORK/benchserver.log" "$BENCHSERVER" serve -addr 127.0.0.1:0
BS_PID=$BG_PID
wait_line "$BS_PID" "$WORK/benchserver.log" '^127\.0\.0\.1:[0-9]+$' 10
BS_ADDR=$(head -n 1 "$WORK/benchserver.log")
wrk_measure ceiling "http://$BS_ADDR/healthz"
CEIL_RPS=$W_RPS CEIL_P50=$W_P50 CEIL_P99=$W_P99 CEIL_ERRS=$W_ERRS
if [[ $LIGHT != 0 ]]; then
	wrk_measure ceiling-light "http://$BS_ADDR/healthz" 1 4 "$LIGHT" 1s
	CEIL_L_RPS=$W_RPS CEIL_L_P50=$W_P50 CEIL_L_P99=$W_P99
fi
stop_pid "$BS_PID"

# ---------------------------------------------------------------------------
# 5 and 2. One `all` process: idle RSS, then /healthz and /readyz under wrk

say "starting svc run --role all"
start_bg "$WORK/svc.log" "$SVC" --config "$CONFIG" run --role all
SVC_PID=$BG_PID
wait_line "$SVC_PID" "$WORK/svc.log" '"msg":"svc ready"' 30
SVC_ADDR=$(grep -m1 '"msg":"svc ready"' "$WORK/svc.log" | sed -n 's/.*"listen":"\([^"]*\)".*/\1/p')
[[ -n $SVC_ADDR ]] || die "no listen address in the ready line of $WORK/svc.log"
say "idle for ${IDLE_SECONDS}s, then reading VmRSS of pid $SVC_PID"
sleep "$IDLE_SECONDS"
RSS_IDLE=$(rss_kib "$SVC_PID")

wrk_measure healthz "http://$SVC_ADDR/healthz"
H_RPS=$W_RPS H_P50=$W_P50 H_P99=$W_P99 H_ERRS=$W_ERRS
if [[ $LIGHT != 0 ]]; then
	wrk_measure healthz-light "http://$SVC_ADDR/healthz" 1 4 "$LIGHT" 1s
	H_L_RPS=$W_RPS H_L_P50=$W_P50 H_L_P99=$W_P99
fi
rate_measure healthz-rate "http://$SVC_ADDR/healthz" "$T_RPS"
HQ_RPS=$W_RPS HQ_P99=$W_P99 HQ_ERRS=$W_ERRS
wrk_measure readyz "http://$SVC_ADDR/readyz"
R_RPS=$W_RPS R_P50=$W_P50 R_P99=$W_P99 R_ERRS=$W_ERRS
# Authenticated: key lookup (cached), permission check, per-key rate limit in Redis.
WRK_HEADER="Authorization: Bearer $API_KEY" wrk_measure me "http://$SVC_ADDR/api/v1/me"
M_RPS=$W_RPS M_P50=$W_P50 M_P99=$W_P99 M_ERRS=$W_ERRS
WRK_HEADER="Authorization: Bearer $API_KEY" rate_measure me-rate "http://$SVC_ADDR/api/v1/me" "$T_ME_RPS"
MQ_RPS=$W_RPS MQ_P99=$W_P99 MQ_ERRS=$W_ERRS
# A model read: authentication plus one indexed query.
api_post() {
	curl -sS --fail-with-body -X POST -H "Authorization: Bearer $API_KEY" -H 'Content-Type: application/json' -d "$2" "http://$SVC_ADDR$1"
}
PRV_ID=$(api_post /api/v1/model-providers '{"type":"openai","name":"bench","config":{},"credential":{"api_key":"sk-bench"}}' | sed -n 's/.*"id":"\(prv_[^"]*\)".*/\1/p')
[[ -n $PRV_ID ]] || die "could not create the benchmark's model provider"
api_post /api/v1/models "{\"key\":\"bench-model\",\"provider_id\":\"$PRV_ID\",\"api\":\"chat_completions\",\"model\":\"gpt-4o-mini\",\"settings\":{}}" >/dev/null ||
	die "could not create the benchmark's model"
WRK_HEADER="Authorization: Bearer $API_KEY" wrk_measure model "http://$SVC_ADDR/api/v1/models/bench-model"
MD_RPS=$W_RPS MD_P50=$W_P50 MD_P99=$W_P99 MD_ERRS=$W_ERRS
WRK_HEADER="Authorization: Bearer $API_KEY" rate_measure model-rate "http://$SVC_ADDR/api/v1/models/bench-model" "$T_ME_RPS"
MDQ_RPS=$W_RPS MDQ_P99=$W_P99 MDQ_ERRS=$W_ERRS
RSS_LOAD=$(rss_kib "$SVC_PID")
RSS_PEAK=$(awk '/^VmHWM:/ { print $2 }' "/proc/$SVC_PID/status")
kill -0 "$SVC_PID" 2>/dev/null || die "svc exited during the load; log: $WORK/svc.log"
stop_pid "$SVC_PID"

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
say "load average after: $LOAD_AFTER"

# ---------------------------------------------------------------------------
# Table

RATIO=$(awk -v a="$H_RPS" -v b="$CEIL_RPS" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
diff_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f", a - b }'; }
# cmd_verdict MEAN MAX judges the mean; a max over the target is noted, not judged.
cmd_verdict() {
	local v
	v=$(verdict "$1" '<' "$T_CMD_MS")
	if [[ $v == PASS ]] && ! fcmp "$2" '<' "$T_CMD_MS"; then v="PASS (max over)"; fi
	echo "$v"
}
errs_note() { ((${1:-0} == 0)) || printf ' (%s errors)' "$1"; }
http_fail() { ((${1:-0} == 0)) && echo "$2" || echo FAIL; }

row "1a. PostgreSQL ceiling: pgbench -S -c 4 -j 2 -T $PGBENCH_SECONDS" "$(fmt "$PGB_TPS" %.0f) TPS (latency ${PGB_LAT} ms)" "—" "info"
row "1b. HTTP ceiling: trivial net/http handler, wrk" "$(fmt "$CEIL_RPS" %.0f) req/s, p50 $(fmt "$CEIL_P50" %.2f) ms, p99 $(fmt "$CEIL_P99" %.2f) ms$(errs_note "$CEIL_ERRS")" "—" "info"
row "1c. floor: a small Go program (benchserver noop), hyperfine" "mean $GO_MEAN ms, max $GO_MAX ms" "—" "info"
row "1d. floor: psql -c 'SELECT 1' (start, connect, query), hyperfine" "mean $PSQL_MEAN ms, max $PSQL_MAX ms" "—" "info"
row "2. /healthz requests/s" "$(fmt "$H_RPS" %.0f) req/s$(errs_note "$H_ERRS")" "≥ $T_RPS" "$(http_fail "$H_ERRS" "$(verdict "$H_RPS" '>=' "$T_RPS")")"
row "2. /healthz p99 paced at about $T_RPS req/s (wrk, $((T_RPS / 500)) paced connections)" "$(fmt "$HQ_P99" %.2f) ms at $(fmt "$HQ_RPS" %.0f) req/s achieved$(errs_note "$HQ_ERRS")" "< $T_P99_MS ms" "$(http_fail "$HQ_ERRS" "$(verdict "$HQ_P99" '<' "$T_P99_MS")")"
row "2. /healthz p99 at saturation (wrk -c$CONNS)" "$(fmt "$H_P99" %.2f) ms (p50 $(fmt "$H_P50" %.2f) ms; trivial handler p99 $(fmt "$CEIL_P99" %.2f) ms)" "—" "info"
row "2. /healthz ÷ trivial handler" "$RATIO" "≥ $T_RATIO" "$(verdict "$RATIO" '>=' "$T_RATIO")"
if [[ $LIGHT != 0 ]]; then
	row "2. light load, wrk -t1 -c4 -d$LIGHT: /healthz vs trivial handler" "$(fmt "$H_L_RPS" %.0f) vs $(fmt "$CEIL_L_RPS" %.0f) req/s; p50 $(fmt "$H_L_P50" %.3f) vs $(fmt "$CEIL_L_P50" %.3f) ms; p99 $(fmt "$H_L_P99" %.2f) vs $(fmt "$CEIL_L_P99" %.2f) ms" "—" "info"
fi
row "2. /readyz (one DB query per call)" "$(fmt "$R_RPS" %.0f) req/s, p50 $(fmt "$R_P50" %.2f) ms, p99 $(fmt "$R_P99" %.2f) ms$(errs_note "$R_ERRS")" "—" "$( ((R_ERRS == 0)) && echo info || echo "info, errors")"
ME_RATIO=$(awk -v a="$M_RPS" -v b="$PGB_TPS" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
row "2. GET /api/v1/me, authenticated, requests/s (wrk -c$CONNS)" "$(fmt "$M_RPS" %.0f) req/s, p50 $(fmt "$M_P50" %.2f) ms, p99 $(fmt "$M_P99" %.2f) ms$(errs_note "$M_ERRS")" "≥ $T_ME_RPS" "$(http_fail "$M_ERRS" "$(verdict "$M_RPS" '>=' "$T_ME_RPS")")"
row "2. GET /api/v1/me p99 paced at about $T_ME_RPS req/s" "$(fmt "$MQ_P99" %.2f) ms at $(fmt "$MQ_RPS" %.0f) req/s achieved$(errs_note "$MQ_ERRS")" "< $T_ME_P99_MS ms" "$(http_fail "$MQ_ERRS" "$(verdict "$MQ_P99" '<' "$T_ME_P99_MS")")"
row "2. GET /api/v1/me ÷ pgbench -S TPS" "$ME_RATIO" "≥ $T_ME_RATIO" "$(verdict "$ME_RATIO" '>=' "$T_ME_RATIO")"
MD_RATIO=$(awk -v a="$MD_RPS" -v b="$PGB_TPS" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
row "2. GET /api/v1/models/{key}, authenticated, requests/s (wrk -c$CONNS)" "$(fmt "$MD_RPS" %.0f) req/s, p50 $(fmt "$MD_P50" %.2f) ms, p99 $(fmt "$MD_P99" %.2f) ms$(errs_note "$MD_ERRS")" "≥ $T_ME_RPS" "$(http_fail "$MD_ERRS" "$(verdict "$MD_RPS" '>=' "$T_ME_RPS")")"
row "2. GET /api/v1/models/{key} p99 paced at about $T_ME_RPS req/s" "$(fmt "$MDQ_P99" %.2f) ms at $(fmt "$MDQ_RPS" %.0f) req/s achieved$(errs_note "$MDQ_ERRS")" "< $T_ME_P99_MS ms" "$(http_fail "$MDQ_ERRS" "$(verdict "$MDQ_P99" '<' "$T_ME_P99_MS")")"
row "2. GET /api/v1/models/{key} ÷ pgbench -S TPS" "$MD_RATIO" "≥ $T_ME_RATIO" "$(verdict "$MD_RATIO" '>=' "$T_ME_RATIO")"
row "3. svc bootstrap (first admin, argon2id hash, one transaction)" "$BOOT_MS ms" "< $T_BOOT_MS ms" "$(verdict "$BOOT_MS" '<' "$T_BOOT_MS")"
row "3. svc --version" "mean $V_MEAN ms, max $V_MAX ms (mean $(diff_ms "$V_MEAN" "$GO_MEAN") ms over 1c)" "mean < $T_CMD_MS ms" "$(cmd_verdict "$V_MEAN" "$V_MAX")"
row "3. svc migrate --check (migrated database)" "mean $C_MEAN ms, max $C_MAX ms (mean $(diff_ms "$C_MEAN" "$PSQL_MEAN") ms over 1d)" "mean < $T_CMD_MS ms" "$(cmd_verdict "$C_MEAN" "$C_MAX")"
row "4. run: start to first 200 from /readyz (median of $STARTS)" "$READY_MED ms (min $READY_MIN, max $READY_MAX; logged startup_ms $READY_LOGGED)" "< $T_READY_MS ms" "$(verdict "$READY_MED" '<' "$T_READY_MS")"
row "5. idle RSS of an all process (${IDLE_SECONDS}s after ready)" "$(mib "$RSS_IDLE") MiB" "< $T_RSS_MIB MiB" "$(verdict "$(mib "$RSS_IDLE")" '<' "$T_RSS_MIB")"
row "5. RSS after the wrk runs (peak)" "$(mib "$RSS_LOAD") MiB ($(mib "$RSS_PEAK") MiB)" "—" "info"

FAILS=0
for r in "${ROWS[@]}"; do [[ $r == *"| FAIL |" ]] && FAILS=$((FAILS + 1)); done

MEM_GIB=$(awk '/^MemTotal:/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo)
MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
{
	echo "## svc benchmark, $STARTED_AT"
	echo
	echo "$("$SVC" --version); $(nproc) CPUs ($MODEL), $MEM_GIB GiB;" \
		"load average $LOAD_BEFORE before, $LOAD_AFTER after."
	echo "wrk -t$THREADS -c$CONNS -d$DURATION --latency after a $WARMUP warm-up, on loopback; wrk and the server share the CPUs."
	echo
	echo "| Measure | Value | Target | Result |"
	echo "|---|---|---|---|"
	printf '%s\n' "${ROWS[@]}"
	echo
	if ((FAILS == 0)); then echo "All targets met."; else echo "$FAILS target(s) missed."; fi
} >"$WORK/results.md"
mkdir -p "$(dirname "$RESULTS")"
cp "$WORK/results.md" "$RESULTS"
echo
cat "$RESULTS"
say "results written to ${RESULTS#"$REPO"/}"
