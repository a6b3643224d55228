#!/usr/bin/env bash
# Checks the client examples of docs/examples against a real svc.
#
#   scripts/check-examples.sh install   installs the TypeScript example's pinned
#                                       packages (docs/examples/typescript/
#                                       package-lock.json) with `npm ci` when they
#                                       are missing or the lock file changed;
#                                       scripts/test.sh runs it before the tests
#   scripts/check-examples.sh           install, start the test services, then run
#                                       TestExamples (docs/examples/examples_test.go):
#                                       it generates the TypeScript types from
#                                       openapi/openapi.yaml, type-checks the
#                                       example with tsc, and runs both examples
#                                       against a real svc process
#
# Needs Node.js 20 or later, with npm. docs/decisions/0060-client-examples.md
# explains the choices.
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

npm_dir=docs/examples/typescript
stamp=$npm_dir/node_modules/.svc-lock-sha256

install() {
	for tool in node npm sha256sum; do
		command -v "$tool" >/dev/null 2>&1 || { echo "check-examples: $tool is needed: Node.js 20 or later, with npm" >&2; exit 1; }
	done
	node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
		{ echo "check-examples: Node.js $(node --version) is too old: 20 or later is needed" >&2; exit 1; }
	local lock_sum
	lock_sum=$(sha256sum "$npm_dir/package-lock.json" | cut -d' ' -f1)
	if [[ ! -f $stamp || $(<"$stamp") != "$lock_sum" ]]; then
		echo "check-examples: npm ci in $npm_dir" >&2
		(cd "$npm_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
		echo "$lock_sum" >"$stamp"
	fi
}

case ${1:-} in
install)
	install
	;;
"")
	install
	scripts/services.sh start
	eval "$(scripts/services.sh env)"
	export TEST_DATABASE_URL TEST_REDIS_URL TEST_S3_ENDPOINT TEST_S3_ACCESS_KEY_ID TEST_S3_SECRET_ACCESS_KEY
	# No SVC_ configuration from the caller's shell may leak into the test.
	while IFS= read -r var; do unset "$var"; done < <(env | sed -n 's/^\(SVC_[A-Z0-9_]*\)=.*/\1/p')
	go test -count=1 -run '^TestExamples$' ./docs/examples
	;;
*)
	echo "usage: scripts/check-examples.sh [install]" >&2
	exit 2
	;;
esac
