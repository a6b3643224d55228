#!/usr/bin/env bash
# Checks openapi/openapi.yaml with strict OpenAPI 3.0 tooling, and checks what
# a generator makes of it:
#   1. Redocly CLI `lint` (openapi/redocly.yaml: the recommended rules, every
#      warning an error; the findings that stay are listed with their reasons
#      in openapi/.redocly.lint-ignore.yaml);
#   2. Spectral (openapi/.spectral.yaml: spectral:oas, every warning fatal);
#   3. openapi-typescript with its default options, then tsc on
#      tools/npm/contract-check.ts, a small use of the generated types through
#      openapi-fetch (creates without defaulted members, no change without
#      If-Match, assets as bytes).
# The tools are pinned in tools/npm/package.json and package-lock.json and
# installed there with `npm ci` when missing or when the lock file changed.
# docs/decisions/0054-contract-lint.md explains the choices.
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

npm_dir=tools/npm
bin=$npm_dir/node_modules/.bin
stamp=$npm_dir/node_modules/.svc-lock-sha256

for tool in node npm sha256sum; do
	command -v "$tool" >/dev/null 2>&1 || { echo "lint-contract: $tool is needed: Node.js 20.19 or later (22.12 or later past 20), with npm" >&2; exit 1; }
done
# Redocly CLI's own floor (its package.json engines).
node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 ? (a === 21 || (a === 22 && b < 12) ? 1 : 0) : a === 20 && b >= 19 ? 0 : 1)' ||
	{ echo "lint-contract: Node.js $(node --version) is too old for Redocly CLI: 20.19 or later (22.12 or later past 20) is needed" >&2; exit 1; }

# No usage reports from the tools: Redocly's telemetry and update check, and
# the analytics some packages would send from install scripts (not run).
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true SCARF_ANALYTICS=false DO_NOT_TRACK=1

lock_sum=$(sha256sum "$npm_dir/package-lock.json" | cut -d' ' -f1)
if [[ ! -f $stamp || $(<"$stamp") != "$lock_sum" ]]; then
	echo "lint-contract: npm ci in $npm_dir" >&2
	(cd "$npm_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
	echo "$lock_sum" >"$stamp"
fi

echo "lint-contract: redocly lint" >&2
"$bin/redocly" lint --config openapi/redocly.yaml --format=stylish openapi/openapi.yaml

echo "lint-contract: spectral lint" >&2
"$bin/spectral" lint --ruleset openapi/.spectral.yaml --fail-severity=warn openapi/openapi.yaml

echo "lint-contract: openapi-typescript and tsc" >&2
mkdir -p "$npm_dir/.generated"
"$bin/openapi-typescript" openapi/openapi.yaml --output "$npm_dir/.generated/api.d.ts" >/dev/null
"$bin/tsc" --project "$npm_dir/tsconfig.json"

echo "lint-contract: openapi/openapi.yaml passes" >&2
