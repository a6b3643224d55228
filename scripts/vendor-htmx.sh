#!/usr/bin/env bash
# Vendors htmx into internal/console/assets from the npm registry, and checks
# that the file is the one the console was built and tested with. Run it only
# to change htmx's version (then update VERSION and SHA256 here).
set -euo pipefail
VERSION=2.0.11
SHA256=d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "htmx.org@$VERSION" >/dev/null && tar xzf "htmx.org-$VERSION.tgz")
echo "$SHA256  $tmp/package/dist/htmx.min.js" | sha256sum --check --quiet
cp "$tmp/package/dist/htmx.min.js" internal/console/assets/htmx.min.js
cp "$tmp/package/LICENSE" internal/console/assets/htmx.LICENSE
echo "vendor-htmx: htmx $VERSION in internal/console/assets"
