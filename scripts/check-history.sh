#!/usr/bin/env bash
# Fails when a comment or a document speaks of the project's history or of
# documents outside the repository: comments and docs describe the code as it
# is (CONTRIBUTING.md, "Comments and docs"). Decision records
# (docs/decisions/) and measurements (docs/performance.md) keep their dated
# context and are not checked.
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

words='(later|future|next|previous|earlier) (issue|session|release)s?|[Ii]ssue #?[0-9]+|[Tt]his (build|session|release)\b|\b(SPEC|DESIGN|RELIABILITY|ECOSYSTEM|STYLE)(\.md)?\b|\b[Ss]pec(ification)? (section )?[0-9]+(\.[0-9]+)*|[Tt]he specification'

found=0
check() { # check FILE COMMENT-PREFIX-REGEX (empty: every line)
	local out
	if [[ -n $2 ]]; then
		out=$(grep -nE -- "$2" "$1" | grep -E -- "$words" || true)
	else
		out=$(grep -nE -- "$words" "$1" || true)
	fi
	if [[ -n $out ]]; then
		sed "s|^|$1:|" <<<"$out"
		found=1
	fi
}

while IFS= read -r f; do
	case $f in
	gen/* | docs/decisions/* | docs/performance.md | scripts/check-history.sh) continue ;;
	*.go) check "$f" '(^|[[:space:]])//' ;;
	*.sql) check "$f" '(^|[[:space:]])--' ;;
	*.sh | *.yaml | *.yml | *.toml | Makefile) check "$f" '(^|[[:space:]])#' ;;
	*.md) check "$f" '' ;;
	esac
done < <(git ls-files --cached --others --exclude-standard)

if ((found)); then
	echo "check-history: the lines above speak of history or of documents outside the repository; say what the code does now, and cite docs/decisions/ instead" >&2
	exit 1
fi
