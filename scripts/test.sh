#!/usr/bin/env bash
# Runs every test with the race detector against real servers: starts the private
# PostgreSQL, Redis and S3 server (installing or building them if missing) and
# installs Chromium for the API-page browser test, promtool for the
# observability checks and the TypeScript client example's npm packages
# (scripts/check-examples.sh install). Extra arguments go to
# `go test` (default ./...).
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

command -v go >/dev/null || { echo "test: Go is required (https://go.dev/dl/)" >&2; exit 1; }
scripts/services.sh start
eval "$(scripts/services.sh env)"
export TEST_DATABASE_URL TEST_REDIS_URL TEST_S3_ENDPOINT TEST_S3_ACCESS_KEY_ID TEST_S3_SECRET_ACCESS_KEY
if [[ ${SVCDEV_SKIP_BROWSER_TESTS:-} != 1 ]]; then
	scripts/install-chromium.sh
fi
# promtool checks the metrics, the dashboard and the alert rules (deploy/observability).
scripts/install-promtool.sh
# TestExamples (docs/examples) type-checks and runs the TypeScript client example.
scripts/check-examples.sh install

# No SVC_ configuration from the caller's shell may leak into the tests.
while IFS= read -r var; do unset "$var"; done < <(env | sed -n 's/^\(SVC_[A-Z0-9_]*\)=.*/\1/p')

if (($# == 0)); then set -- ./...; fi
exec go test -race -count=1 -timeout 15m "$@"
