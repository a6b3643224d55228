#!/usr/bin/env bash
# Vendors Scalar's standalone API-reference bundle into internal/webui/assets.
#
# Fetches @scalar/api-reference with `npm pack`, checks the tarball's npm
# integrity and the bundle's sha256 against pinned values, and writes a
# deterministic `gzip -9 -n` copy (no file name, no timestamp) plus the
# package's LICENSE. The output is committed, so builds never need npm; rerun
# this only when bumping the version (update VERSION, both hashes, and
# webui.ScalarAsset / the embedded file name together).
set -euo pipefail

VERSION="1.72.1"
PKG="@scalar/api-reference@${VERSION}"
INTEGRITY="sha512-XpEJ0rfc/cXbCrR+iC4kK0o/WwX2dTtGQbT049OlPKAHD6IMIFdTeGz2r+M27P2EDWKyUITRm/NzlP8z2pw/Ow=="
JS_SHA256="bf091006bdc3af6067af77c2f534812e3e633e94a94e87138069f570f33b762c"

log() { printf 'vendor-scalar: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

for tool in npm node tar gzip sha256sum; do
	command -v "$tool" >/dev/null 2>&1 || die "required tool not found: $tool"
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${ROOT}/internal/webui/assets"
OUT_GZ="${DEST}/scalar-${VERSION}.js.gz"
OUT_LICENSE="${DEST}/SCALAR-LICENSE"

# The npm tarball ships no LICENSE file (package.json says "MIT" and the README
# points at the repository's LICENSE), so the upstream text is reproduced here.
# If a future version ships package/LICENSE, that file is used instead.
write_license() {
	if tar -xzf "$TGZ" -C "$TMP" package/LICENSE 2>/dev/null; then
		cp "${TMP}/package/LICENSE" "$OUT_LICENSE"
		return
	fi
	{
		printf '@scalar/api-reference %s (dist/browser/standalone.js), vendored as %s\n' \
			"$VERSION" "scalar-${VERSION}.js.gz"
		printf 'Source: https://github.com/scalar/scalar (LICENSE at the repository root)\n'
		printf 'Bundled third-party components keep their /*! @license */ notices inside the file.\n\n'
		cat <<'LICENSE'
MIT License

Copyright (c) 2023-present Scalar

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
LICENSE
	} >"$OUT_LICENSE"
}

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

log "npm pack ${PKG}"
(cd "$TMP" && npm pack --silent "$PKG" >/dev/null)
TGZ="$(find "$TMP" -maxdepth 1 -name '*.tgz' -print -quit)"
[[ -n "$TGZ" ]] || die "npm pack produced no tarball"

# npm integrity is "sha512-" + base64 of the raw sha512 digest of the tarball.
# node is always present next to npm, unlike xxd/openssl.
got_integrity="$(node -e '
const fs = require("fs"), crypto = require("crypto");
const h = crypto.createHash("sha512").update(fs.readFileSync(process.argv[1]));
process.stdout.write("sha512-" + h.digest("base64"));
' "$TGZ")"
[[ "$got_integrity" == "$INTEGRITY" ]] ||
	die "tarball integrity mismatch: got ${got_integrity}, want ${INTEGRITY}"
log "tarball integrity ok"

tar -xzf "$TGZ" -C "$TMP" package/dist/browser/standalone.js package/package.json
license="$(node -p 'require(process.argv[1]).license' "${TMP}/package/package.json")"
[[ "$license" == "MIT" ]] || die "unexpected license in package.json: ${license} (review before vendoring)"
JS="${TMP}/package/dist/browser/standalone.js"
got_sha="$(sha256sum "$JS" | cut -d' ' -f1)"
[[ "$got_sha" == "$JS_SHA256" ]] ||
	die "standalone.js sha256 mismatch: got ${got_sha}, want ${JS_SHA256}"
log "standalone.js sha256 ok ($(wc -c <"$JS") bytes)"

mkdir -p "$DEST"
# Write to a temp file first so an interrupted run never leaves a truncated asset.
gzip -9 -n -c "$JS" >"${TMP}/out.js.gz"
[[ "$(gzip -dc "${TMP}/out.js.gz" | sha256sum | cut -d' ' -f1)" == "$JS_SHA256" ]] ||
	die "gzip round-trip check failed"
mv "${TMP}/out.js.gz" "$OUT_GZ"
write_license

log "wrote ${OUT_GZ#"$ROOT"/} ($(wc -c <"$OUT_GZ") bytes, sha256 $(sha256sum "$OUT_GZ" | cut -d' ' -f1))"
log "wrote ${OUT_LICENSE#"$ROOT"/}"
