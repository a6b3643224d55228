#!/usr/bin/env bash
# Installs promtool, Prometheus's checker, for the tests of the metrics, the
# dashboard and the alert rules under deploy/observability (internal/httpapi).
#
# Idempotent: does nothing when `promtool` is already on PATH. Otherwise it
# downloads Debian's prometheus package (without installing it, so no server
# is set up or started), takes /usr/bin/promtool out of it and installs that
# one file as /usr/local/bin/promtool. Needs root (or sudo) and access to the
# Debian package mirror.
set -euo pipefail

log() { printf 'install-promtool: %s\n' "$*" >&2; }

if command -v promtool >/dev/null 2>&1; then
	log "already installed: $(command -v promtool)"
	exit 0
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	else
		log "must run as root (or with sudo available) to install /usr/local/bin/promtool"
		exit 1
	fi
fi

tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
# apt's download user must be able to write there.
chmod 0777 "$tmp"
cd -- "$tmp"
if ! apt-get download -qq prometheus >&2 2>/dev/null; then
	log "running apt-get update"
	"${SUDO[@]}" apt-get update -qq >&2
	apt-get download -qq prometheus >&2
fi
deb=$(ls -- prometheus_*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" ./usr/bin/promtool
"${SUDO[@]}" install -m 0755 "$tmp/usr/bin/promtool" /usr/local/bin/promtool
log "installed: /usr/local/bin/promtool ($(promtool --version 2>&1 | head -n 1))"
