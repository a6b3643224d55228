#!/usr/bin/env bash
# Installs Debian's Chromium for the headless-browser tests (internal/webui).
#
# Idempotent: does nothing when `chromium` is already on PATH. Otherwise runs
# `apt-get update` once and installs the package without recommended extras.
# Needs root (or sudo) and access to the Debian package mirror.
set -euo pipefail

log() { printf 'install-chromium: %s\n' "$*" >&2; }

if command -v chromium >/dev/null 2>&1; then
	log "already installed: $(command -v chromium)"
	exit 0
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	else
		log "must run as root (or with sudo available) to apt-get install chromium"
		exit 1
	fi
fi

log "running apt-get update"
"${SUDO[@]}" apt-get update -qq >&2

log "installing chromium (no recommends)"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq --no-install-recommends chromium >&2

if ! command -v chromium >/dev/null 2>&1; then
	log "apt-get finished but chromium is still not on PATH"
	exit 1
fi
log "installed: $(command -v chromium) ($(chromium --version 2>/dev/null || echo 'version unknown'))"
