#!/usr/bin/env bash
# Private PostgreSQL, Redis and S3-compatible servers for development and tests.
#
#   scripts/services.sh start [SERVER...]  start them (idempotent), installing
#                                          them if missing; SERVER is postgres,
#                                          redis or s3 (default: all three)
#   scripts/services.sh stop [SERVER...]   stop them; servers that are not
#                                          running are ignored
#   scripts/services.sh env     print shell exports for the test and dev URLs
#                               (use: eval "$(scripts/services.sh env)")
#
# The development database (the one `make run` uses) is named after the state
# directory, svc_<checkout name>_<hash of the directory's path>, and `start`
# creates it: two checkouts whose servers share a port never share a database,
# as each has a key ring of its own under its state directory.
#
# Settings (environment):
#   SVCDEV_DIR      state directory            (default: <repo>/.dev)
#   SVCDEV_PG_PORT      PostgreSQL port            (default: 55432)
#   SVCDEV_REDIS_PORT   Redis port                 (default: 56379)
#   SVCDEV_S3_PORT      S3 (versitygw) port        (default: 57070)
#   SVCDEV_CACHE_DIR    built tools, shared by clones
#                       (default: ${XDG_CACHE_HOME:-$HOME/.cache}/svc-dev)
#   SVCDEV_WAIT_SECONDS how long to wait for start (default: 60)
#
# The S3 server is versitygw (Apache-2.0), built once with `go install` into
# $SVCDEV_CACHE_DIR/versitygw-<version>/ (about 2.5 minutes on 2 cores; Go and
# the module proxy are needed that first time) and run in single-account mode
# with fixed development keys over a posix directory under $SVCDEV_DIR/s3.
#
# The servers listen on 127.0.0.1 only, on non-default ports, with their own
# data directories, so a system PostgreSQL (5432) or Redis (6379) on the same
# machine is never touched. Works as root without systemd (CI: Debian 12, a
# clean clone, CI=true, no stdin): initdb and the server then run as the
# `postgres` user. Messages go to stderr; a successful run prints one line per
# server it started and nothing else.
set -euo pipefail

log() { printf 'services: %s\n' "$*" >&2; }
die() {
	log "$*"
	exit 1
}

REPO=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd -P)
DEV=${SVCDEV_DIR:-$REPO/.dev}
[[ $DEV == /* ]] || DEV=$PWD/$DEV
PG_PORT=${SVCDEV_PG_PORT:-55432}
REDIS_PORT=${SVCDEV_REDIS_PORT:-56379}
S3_PORT=${SVCDEV_S3_PORT:-57070}
WAIT_SECONDS=${SVCDEV_WAIT_SECONDS:-60}
CACHE_DIR=${SVCDEV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-dev}

# dev_db_name prints the development database of $DEV: svc_, the checkout's
# name in lower case (letters, digits and _, at most 24), _ and the first 8
# hex digits of the SHA-256 of $DEV. It needs no quoting in SQL or URLs.
dev_db_name() {
	local name sum
	name=$(basename -- "$REPO" | tr '[:upper:]' '[:lower:]' | tr -c 'a-z0-9_\n' '_' | cut -c1-24)
	sum=$(printf '%s' "$DEV" | sha256sum | cut -c1-8)
	printf 'svc_%s_%s\n' "$name" "$sum"
}
DEV_DB=$(dev_db_name)

for v in PG_PORT REDIS_PORT S3_PORT WAIT_SECONDS; do
	[[ ${!v} =~ ^[0-9]+$ ]] && ((${!v} > 0 && ${!v} < 65536)) || die "$v must be a number from 1 to 65535, got '${!v}'"
done

# Our psql calls pass every connection setting explicitly; make sure nothing
# in the caller's libpq environment (service files, options, passwords) applies.
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGPASSWORD PGPASSFILE \
	PGSERVICE PGSERVICEFILE PGOPTIONS PGSSLMODE PGCLUSTER PGDATA

IS_ROOT=0
[[ $(id -u) -eq 0 ]] && IS_ROOT=1

# ---------------------------------------------------------------------------
# Installation

APT_UPDATED=0

# apt_install PKG... installs Debian packages quietly; the output goes to a
# log that is shown only on failure. `apt-get update` runs at most once.
apt_install() {
	local sudo=()
	if ((!IS_ROOT)); then
		command -v sudo >/dev/null 2>&1 || die "$* not installed; run as root or install: apt-get install $*"
		sudo=(sudo)
	fi
	local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300)
	local out="$DEV/apt.log"
	log "installing $* (apt-get; log: $out)"
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
}

# find_pg_bin [VERSION] prints the bin directory of a full PostgreSQL server
# install: the requested major version, else the newest. A client-only install
# (postgresql-client-NN) also creates /usr/lib/postgresql/NN/bin but has no
# initdb, so only directories with the server tools count.
find_pg_bin() {
	local want=${1:-} d
	if [[ -n $want ]]; then
		d=/usr/lib/postgresql/$want/bin
		[[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]] && printf '%s\n' "$d"
		return 0
	fi
	local dirs=()
	# The glob stays literal when nothing matches; the -x tests filter that out.
	mapfile -t dirs < <(printf '%s\n' /usr/lib/postgresql/*/bin | sort -Vr)
	for d in "${dirs[@]}"; do
		if [[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]]; then
			printf '%s\n' "$d"
			return 0
		fi
	done
}

ensure_installed() {
	[[ -n $(find_pg_bin) ]] || apt_install postgresql
	[[ -n $(find_pg_bin) ]] || die "no PostgreSQL server under /usr/lib/postgresql/*/bin after installing"
	local need=()
	command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
	command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
	((${#need[@]} == 0)) || apt_install "${need[@]}"
	command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 ||
		die "redis-server or redis-cli still missing after installing"
}

# ---------------------------------------------------------------------------
# PostgreSQL

# as_postgres runs a command as the postgres user when we are root (initdb
# and postgres refuse to run as root). It starts from / so a cwd the postgres
# user cannot read (e.g. /root) gives no warnings.
as_postgres() {
	if ((IS_ROOT)); then
		(cd / && runuser -u postgres -- "$@")
	else
		"$@"
	fi
}

# fallback_dir is where the data directory goes when the postgres user cannot
# reach $DEV (e.g. a clone under /root). One per $DEV, so clones do not collide.
fallback_dir() {
	printf '/tmp/svc-dev-%s\n' "$(printf '%s' "$DEV" | cksum | cut -d' ' -f1)"
}

# choose_pg_data sets PG_DATA (and PG_NOTE when it had to move). As root the
# data directory must be owned by postgres and every parent directory must be
# searchable by postgres.
choose_pg_data() {
	PG_DATA=$DEV/pg
	PG_NOTE=
	((IS_ROOT)) || return 0
	id postgres >/dev/null 2>&1 || die "user 'postgres' does not exist (is the postgresql package installed?)"
	as_postgres test -x "$DEV" && return 0

	local fb
	fb=$(fallback_dir)
	mkdir -p "$fb"
	# /tmp is shared: use the directory only if it is really ours.
	[[ ! -L $fb && -O $fb ]] || die "$fb exists and is not owned by $(id -un); remove it or set SVCDEV_DIR"
	chmod 755 "$fb"
	PG_DATA=$fb/pg
	PG_NOTE=" (user postgres cannot reach $DEV, so the data is in $PG_DATA)"
}

pg_ready() {
	# -U/-d: without them the probe logs "role root does not exist" in the server log.
	"$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -t 3 >/dev/null 2>&1
}

pg_running() {
	[[ -f $PG_DATA/PG_VERSION ]] && as_postgres "$PGBIN/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1
}

# init_pg creates the cluster once. initdb writes into a temporary sibling that
# is renamed into place, so an interrupted initdb never leaves a half-made
# data directory behind.
init_pg() {
	[[ -f $PG_DATA/PG_VERSION ]] && return 0
	if [[ -e $PG_DATA ]]; then
		rmdir "$PG_DATA" 2>/dev/null || die "$PG_DATA exists but is not a PostgreSQL data directory; remove it"
	fi
	local tmp=$PG_DATA.initdb-tmp out # fixed name: we hold the lock
	out=$(dirname "$PG_DATA")/initdb.log
	rm -rf "$tmp"
	mkdir -m 700 "$tmp"
	((IS_ROOT)) && chown postgres:postgres "$tmp"
	# --no-sync: a crash during setup is handled by starting over.
	if ! as_postgres "$PGBIN/initdb" -D "$tmp" -A trust -U postgres -E UTF8 --locale=C.UTF-8 --no-sync >"$out" 2>&1; then
		tail -n 20 "$out" >&2
		rm -rf "$tmp"
		die "initdb failed (log: $out)"
	fi
	printf "\ninclude_if_exists = 'svc.conf'\n" >>"$tmp/postgresql.conf"
	mv "$tmp" "$PG_DATA"
}

# write_pg_conf (re)writes the settings this script owns, before every start.
write_pg_conf() {
	local sockdir=$PG_DATA
	# A Unix socket path must fit in 107 bytes; a deep checkout may not. Every
	# client here uses TCP, so then simply go without a socket.
	((${#sockdir} + 20 < 107)) || sockdir=
	sockdir=${sockdir//\'/\'\'} # quoted for postgresql.conf
	cat >"$PG_DATA/svc.conf" <<EOF
# Written by scripts/services.sh before every start: edit the script instead.
# This cluster is for development and tests only. fsync, synchronous_commit and
# full_page_writes are off for speed, so a machine crash can lose or corrupt
# its data. Never use these settings for data you want to keep.
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$sockdir'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
	if ((IS_ROOT)); then chown postgres:postgres "$PG_DATA/svc.conf"; fi
}

start_pg() {
	choose_pg_data
	# A cluster made by another major version needs that version's binaries.
	if [[ -f $PG_DATA/PG_VERSION ]]; then
		local v
		v=$(<"$PG_DATA/PG_VERSION")
		PGBIN=$(find_pg_bin "$v")
		[[ -n $PGBIN ]] || die "$PG_DATA was made by PostgreSQL $v, which is not installed; install postgresql-$v or remove $PG_DATA"
		if ((IS_ROOT)) && [[ $(stat -c %U "$PG_DATA") != postgres ]]; then
			die "$PG_DATA is owned by $(stat -c %U "$PG_DATA"), not postgres; remove it to start over"
		fi
	fi
	if pg_running; then
		pg_ready && return 0
		die "PostgreSQL from $PG_DATA is running but not answering on 127.0.0.1:$PG_PORT (another SVCDEV_PG_PORT?); run: scripts/services.sh stop"
	fi
	if pg_ready; then
		log "postgres: something else already answers on 127.0.0.1:$PG_PORT; using it"
		return 0
	fi
	port_open "$PG_PORT" && die "127.0.0.1:$PG_PORT is in use by something that is not PostgreSQL; set SVCDEV_PG_PORT"

	mkdir -p "$(dirname "$PG_DATA")"
	init_pg
	write_pg_conf
	local out
	if ! out=$(as_postgres "$PGBIN/pg_ctl" -D "$PG_DATA" -l "$PG_DATA/server.log" -w -t "$WAIT_SECONDS" start 2>&1); then
		printf '%s\n' "$out" | sed 's/^/    /' >&2
		show_log_tail "$PG_DATA/server.log"
		die "PostgreSQL failed to start"
	fi
	wait_for "PostgreSQL on 127.0.0.1:$PG_PORT" "$PG_DATA/server.log" pg_ready
	log "postgres $(<"$PG_DATA/PG_VERSION") started on 127.0.0.1:$PG_PORT$PG_NOTE"
}

psql_q() {
	"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres "$@"
}

# ensure_db creates the development database $DEV_DB when it is missing.
ensure_db() {
	local exists
	exists=$(psql_q -tAc "SELECT 1 FROM pg_database WHERE datname='$DEV_DB'")
	[[ $exists == 1 ]] && return 0
	# A concurrent creator (a second `make run` of this checkout) may win the race.
	psql_q -c "CREATE DATABASE $DEV_DB" >/dev/null 2>&1 ||
		[[ $(psql_q -tAc "SELECT 1 FROM pg_database WHERE datname='$DEV_DB'") == 1 ]] ||
		die "could not create database $DEV_DB"
	log "postgres: made the development database $DEV_DB"
}

stop_pg() {
	PGBIN=$(find_pg_bin)
	[[ -n $PGBIN ]] || return 0
	local d v
	# Try both possible places, so stop works whichever one start chose.
	for d in "$DEV/pg" "$(fallback_dir)/pg"; do
		[[ -f $d/PG_VERSION ]] || continue
		v=$(<"$d/PG_VERSION")
		PGBIN=$(find_pg_bin "$v")
		[[ -n $PGBIN ]] || continue
		as_postgres "$PGBIN/pg_ctl" -D "$d" status >/dev/null 2>&1 || continue
		as_postgres "$PGBIN/pg_ctl" -D "$d" -m fast -w -t "$WAIT_SECONDS" stop >/dev/null ||
			die "could not stop PostgreSQL in $d"
		log "postgres stopped ($d)"
	done
}

# ---------------------------------------------------------------------------
# Redis

REDIS_DIR=$DEV/redis

redis_cli() {
	# timeout: a non-Redis listener on the port must not hang us.
	timeout 5 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"
}

redis_ping() {
	[[ $(redis_cli ping 2>/dev/null) == PONG ]]
}

start_redis() {
	redis_ping && return 0
	# redis-server reports a busy port only in its log, after daemonizing;
	# catch the common case here instead of waiting for the timeout.
	port_open "$REDIS_PORT" && die "127.0.0.1:$REDIS_PORT is in use by something that does not answer Redis PING; set SVCDEV_REDIS_PORT"
	mkdir -p "$REDIS_DIR"
	redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" \
		--save "" --appendonly no --dir "$REDIS_DIR" \
		--logfile "$REDIS_DIR/redis.log" --pidfile "$REDIS_DIR/redis.pid" >/dev/null ||
		die "redis-server failed to start (log: $REDIS_DIR/redis.log)"
	wait_for "Redis on 127.0.0.1:$REDIS_PORT" "$REDIS_DIR/redis.log" redis_ping
	log "redis started on 127.0.0.1:$REDIS_PORT"
}

stop_redis() {
	command -v redis-cli >/dev/null 2>&1 && redis_ping || return 0
	# Only shut down the server this directory started: a Redis that another
	# clone (or anything else) runs on the same port is left alone.
	local ours theirs
	ours=$(cat "$REDIS_DIR/redis.pid" 2>/dev/null || true)
	theirs=$(redis_cli info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p')
	if [[ -z $ours || $ours != "$theirs" ]]; then
		log "redis on 127.0.0.1:$REDIS_PORT was not started from $DEV; leaving it running"
		return 0
	fi
	redis_cli shutdown nosave >/dev/null 2>&1 || true
	wait_for "Redis shutdown" "$REDIS_DIR/redis.log" redis_down
	log "redis stopped"
}

redis_down() { ! redis_ping; }

# port_open PORT reports whether something accepts TCP connections on it.
port_open() {
	timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# ---------------------------------------------------------------------------
# S3 (versitygw)

VERSITYGW_VERSION=v1.8.0
VERSITYGW_DIR=$CACHE_DIR/versitygw-$VERSITYGW_VERSION
VERSITYGW=$VERSITYGW_DIR/versitygw
S3_DIR=$DEV/s3
# Development keys of the single-account server: it listens on 127.0.0.1 only
# and holds test data, so they are not secrets.
S3_ACCESS_KEY=svcdev
S3_SECRET_KEY=svcdev-secret-key

# ensure_versitygw builds the pinned versitygw once per machine. The build goes
# to a temporary directory whose binary is renamed into place, so an
# interrupted build, or one racing another clone's, never leaves half a binary.
ensure_versitygw() {
	[[ -x $VERSITYGW ]] && return 0
	command -v go >/dev/null 2>&1 || die "Go is required to build versitygw $VERSITYGW_VERSION (https://go.dev/dl/)"
	mkdir -p "$CACHE_DIR" "$S3_DIR"
	local tmp out=$S3_DIR/build.log
	tmp=$(mktemp -d "$CACHE_DIR/.versitygw-build.XXXXXX")
	log "building versitygw $VERSITYGW_VERSION into $VERSITYGW_DIR (once per machine, about 2.5 minutes; log: $out)"
	# Built outside the repository: its go.mod and GOFLAGS must not steer a tool's build.
	if ! (cd "$tmp" && GOBIN=$tmp/bin GOFLAGS= go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION") </dev/null >"$out" 2>&1; then
		tail -n 20 "$out" >&2
		rm -rf "$tmp"
		die "building versitygw failed (log: $out)"
	fi
	mkdir -p "$VERSITYGW_DIR"
	mv -f "$tmp/bin/versitygw" "$VERSITYGW"
	rm -rf "$tmp"
}

# s3_ping reports whether an HTTP server answers on the S3 port (versitygw
# refuses the anonymous request, but with an HTTP answer).
s3_ping() {
	timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3 && read -r line <&3 && [[ $line == HTTP/1.* ]]' _ "$S3_PORT" 2>/dev/null
}

s3_down() { ! port_open "$S3_PORT"; }

# s3_pid prints the pid of the versitygw this directory started, if it runs.
s3_pid() {
	local pid
	pid=$(cat "$S3_DIR/versitygw.pid" 2>/dev/null) || return 1
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q versitygw || return 1
	printf '%s\n' "$pid"
}

start_s3() {
	if s3_pid >/dev/null; then
		wait_for "versitygw on 127.0.0.1:$S3_PORT" "$S3_DIR/versitygw.log" s3_ping
		return 0
	fi
	if s3_ping; then
		log "s3: something else already answers on 127.0.0.1:$S3_PORT; using it"
		return 0
	fi
	port_open "$S3_PORT" && die "127.0.0.1:$S3_PORT is in use by something that is not an HTTP server; set SVCDEV_S3_PORT"
	ensure_versitygw
	mkdir -p "$S3_DIR/data"
	# setsid: the server outlives this script and a terminal's Ctrl-C, like the
	# daemonized PostgreSQL and Redis. --keep-alive: connections are reused, as
	# every production S3 does (versitygw closes each one after its request
	# otherwise, and every request would pay a new connection); --quiet: no
	# log line per request.
	ROOT_ACCESS_KEY=$S3_ACCESS_KEY ROOT_SECRET_KEY=$S3_SECRET_KEY \
		setsid "$VERSITYGW" --port "127.0.0.1:$S3_PORT" --keep-alive --quiet posix "$S3_DIR/data" \
		</dev/null >"$S3_DIR/versitygw.log" 2>&1 &
	echo $! >"$S3_DIR/versitygw.pid"
	wait_for "versitygw on 127.0.0.1:$S3_PORT" "$S3_DIR/versitygw.log" s3_ping
	log "s3 (versitygw $VERSITYGW_VERSION) started on 127.0.0.1:$S3_PORT"
}

stop_s3() {
	local pid
	if ! pid=$(s3_pid); then
		if port_open "$S3_PORT"; then log "s3 on 127.0.0.1:$S3_PORT was not started from $DEV; leaving it running"; fi
		return 0
	fi
	kill "$pid" 2>/dev/null || true
	wait_for "versitygw shutdown" "$S3_DIR/versitygw.log" s3_down
	rm -f "$S3_DIR/versitygw.pid"
	log "s3 stopped"
}

# ---------------------------------------------------------------------------

# wait_for WHAT LOG CMD... polls CMD until it succeeds, for at most
# $WAIT_SECONDS, and fails with the tail of LOG.
wait_for() {
	local what=$1 logfile=$2
	shift 2
	local deadline=$((SECONDS + WAIT_SECONDS))
	until "$@"; do
		if ((SECONDS >= deadline)); then
			show_log_tail "$logfile"
			die "$what: not ready after ${WAIT_SECONDS}s"
		fi
		sleep 0.2
	done
}

show_log_tail() {
	[[ -r $1 ]] || return 0
	log "last lines of $1:"
	tail -n 20 "$1" | sed 's/^/    /' >&2
}

# with_lock re-runs this script under an exclusive lock, so parallel
# `make test` runs do not race on installing, initdb or starting. flock -o
# keeps the lock in the flock process only: the servers started here (and any
# that apt's postinst starts) must not inherit the lock descriptor, or they
# would hold the lock for as long as they run.
with_lock() {
	[[ -n ${SVC_SERVICES_LOCKED:-} ]] && return 0
	[[ -d $DEV ]] || mkdir -p -m 755 "$DEV"
	local rc=0
	SVC_SERVICES_LOCKED=1 flock -o -E 200 -w "$((WAIT_SECONDS * 5))" "$DEV/.services.lock" \
		"$BASH" "${BASH_SOURCE[0]}" "$@" || rc=$?
	((rc != 200)) || die "timed out waiting for another services.sh (lock $DEV/.services.lock)"
	exit "$rc"
}

print_env() {
	local pg=postgres://postgres@127.0.0.1:$PG_PORT redis=redis://127.0.0.1:$REDIS_PORT/0
	# Quoted because '?' is a glob character for the shell that evals this.
	cat <<EOF
export TEST_DATABASE_URL='$pg/postgres?sslmode=disable'
export TEST_REDIS_URL='$redis'
export SVCDEV_DATABASE='$DEV_DB'
export SVCDEV_DATABASE_URL='$pg/$DEV_DB?sslmode=disable'
export SVCDEV_REDIS_URL='$redis'
export TEST_S3_ENDPOINT='127.0.0.1:$S3_PORT'
export TEST_S3_ACCESS_KEY_ID='$S3_ACCESS_KEY'
export TEST_S3_SECRET_ACCESS_KEY='$S3_SECRET_KEY'
EOF
}

# servers SERVER... sets SERVERS to the named servers (default: all three),
# refusing unknown names.
servers() {
	SERVERS=("$@")
	((${#SERVERS[@]})) || SERVERS=(postgres redis s3)
	local s
	for s in "${SERVERS[@]}"; do
		case $s in
		postgres | redis | s3) ;;
		*) die "unknown server '$s' (known: postgres, redis, s3)" ;;
		esac
	done
}

wants() {
	local s
	for s in "${SERVERS[@]}"; do [[ $s == "$1" ]] && return 0; done
	return 1
}

case ${1:-} in
start)
	with_lock "$@"
	servers "${@:2}"
	if wants postgres || wants redis; then ensure_installed; fi
	if wants postgres; then
		PGBIN=$(find_pg_bin)
		start_pg
		ensure_db
	fi
	if wants redis; then start_redis; fi
	if wants s3; then start_s3; fi
	;;
stop)
	with_lock "$@"
	servers "${@:2}"
	if wants postgres; then stop_pg; fi
	if wants redis; then stop_redis; fi
	if wants s3; then stop_s3; fi
	;;
env)
	print_env
	;;
*)
	printf 'usage: %s start|stop [postgres|redis|s3]... | env\n' "$0" >&2
	exit 2
	;;
esac
