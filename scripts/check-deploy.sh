#!/usr/bin/env bash
# Validates the deployment artifacts without a container engine or a cluster
# (docs/decisions/0057-deployment-artifacts.md):
#
#   1. Dockerfile: parsed and linted by BuildKit's own parser and linter, plus
#      svc's rules (pinned bases, several stages, numeric non-root USER, exec-form
#      ENTRYPOINT); its build context, as .dockerignore selects it, is copied
#      aside and `make static` (the Dockerfile's build step) builds there; the
#      binary must be statically linked.
#   2. docker-compose.yaml: loaded by compose-go (the Compose specification's
#      schema and model checks) plus svc's rules; svc's own configuration loader
#      accepts the environment of its control and worker services.
#   3. deploy/helm/svc: `helm lint --strict` and `helm template` with each value
#      set of deploy/helm/svc/ci/, the manifests decoded strictly into the
#      Kubernetes API types and cross-checked (selectors, ports, Secrets and keys,
#      hooks, security context, resources), and the rendered svc.toml loaded by svc.
#   4. Cases that must fail (a grace period shorter than the drain, a key the
#      chart owns set in config, no key ring, a misspelt value, an unknown
#      manifest field, a short stop_grace_period, a root USER), so that a check
#      that stopped checking is noticed.
#
# Helm and the checker (scripts/deploycheck, a module of its own) are built
# once per version into $SVCDEV_CACHE_DIR (default ~/.cache/svc-dev), keyed by
# the checker's sources and go.sum.
set -euo pipefail
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.."

log() { printf 'check-deploy: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
command -v go >/dev/null || die "Go is required (https://go.dev/dl/)"

CACHE_DIR=${SVCDEV_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-dev}
key=$(cat scripts/deploycheck/go.mod scripts/deploycheck/go.sum scripts/deploycheck/*.go | sha256sum | cut -c1-16)
TOOLS=$CACHE_DIR/deploycheck-$key
HELM=$TOOLS/helm
CHECK=$TOOLS/deploycheck

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-deploy.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if [[ ! -x $HELM || ! -x $CHECK ]]; then
	log "building helm and deploycheck into $TOOLS (once per version; several minutes on 2 cores)"
	mkdir -p "$CACHE_DIR"
	build=$(mktemp -d "$CACHE_DIR/.deploycheck-build.XXXXXX")
	if ! (cd scripts/deploycheck && go build -trimpath -ldflags "-s -w" -o "$build/" . tool) >"$tmp/build.log" 2>&1; then
		cat "$tmp/build.log" >&2
		rm -rf "$build"
		die "building the tools failed"
	fi
	rm -rf "$TOOLS"
	mv "$build" "$TOOLS"
fi

# ---------------------------------------------------------------------------
# 1. The Dockerfile, its build context and the static binary.

"$CHECK" dockerfile Dockerfile
"$CHECK" context -root . -out "$tmp/context"
(cd "$tmp/context" && make --no-print-directory static VERSION=check-deploy STATIC_OUT="$tmp/svc") >"$tmp/make.log" 2>&1 ||
	{ cat "$tmp/make.log" >&2; die "make static failed in the Dockerfile's build context"; }
"$CHECK" static "$tmp/svc"
version=$("$tmp/svc" --version)
[[ $version == "svc check-deploy "* ]] || die "the static binary reports its version as: $version"
svc=$tmp/svc
"$svc" keyring generate --out "$tmp/keyring.json" >/dev/null

# svc_loads CONFIG [VAR=VALUE...]: svc's own configuration loader (strict keys,
# types and values) accepts the file and variables; the key ring is the one made
# above, wherever the configuration puts it.
svc_loads() {
	local config=$1
	shift
	local args=()
	[[ -n $config ]] && args=(--config "$config")
	env -i "$@" SVC_ENCRYPTION__KEY_FILE="$tmp/keyring.json" "$svc" "${args[@]}" keyring list >/dev/null
}

# ---------------------------------------------------------------------------
# 2. The Compose file.

"$CHECK" compose docker-compose.yaml
for service in control worker; do
	mapfile -t vars < <("$CHECK" compose -env-of "$service" docker-compose.yaml)
	svc_loads "" "${vars[@]}" || die "svc refuses the environment of the compose service $service"
done
log "docker-compose.yaml: svc accepts the configuration of control and worker"

# ---------------------------------------------------------------------------
# 3. The Helm chart, with each value set.

chart=deploy/helm/svc
externals=(-external svc-database -external svc-redis -external svc-s3 -external svc-keyring -external svc-smtp -external svc-runtime)

# render NAME HELM-ARGS... -- CHECK-ARGS...: lint, template, check, and load the
# rendered configuration with svc.
render() {
	local name=$1 helm_args=() check_args=()
	shift
	while (($#)) && [[ $1 != -- ]]; do helm_args+=("$1"); shift; done
	shift
	check_args=("$@")
	"$HELM" lint --strict --quiet "$chart" "${helm_args[@]}" >"$tmp/lint.log" 2>&1 ||
		{ cat "$tmp/lint.log" >&2; die "helm lint ($name) failed"; }
	"$HELM" template svc "$chart" --namespace agents "${helm_args[@]}" >"$tmp/$name.yaml" ||
		die "helm template ($name) failed"
	printf '%s: ' "$name"
	"$CHECK" manifests "${check_args[@]}" -config-out "$tmp/$name.toml" <"$tmp/$name.yaml"
	svc_loads "$tmp/$name.toml" || die "svc refuses the configuration the chart renders ($name)"
}

render defaults -f "$chart/ci/defaults-values.yaml" --set-file keyring.json="$tmp/keyring.json" -- \
	-want Deployment=2 -want HorizontalPodAutoscaler=1 -want PodDisruptionBudget=2 -want Job=1 -want Secret=3
render existing-secret -f "$chart/ci/existing-secret-values.yaml" -- "${externals[@]}" \
	-want Secret=0 -want ServiceMonitor=1 -want ServiceAccount=0
render no-autoscaling -f "$chart/ci/no-autoscaling-values.yaml" --set-file keyring.json="$tmp/keyring.json" -- \
	-want HorizontalPodAutoscaler=0 -want Job=0 -want PodDisruptionBudget=1 -want Service=1

# ---------------------------------------------------------------------------
# 4. What must be refused.

# refused WHAT EXPECTED COMMAND...: the command fails and says EXPECTED.
refused() {
	local what=$1 expected=$2
	shift 2
	if "$@" >"$tmp/refused.log" 2>&1; then
		die "not refused: $what"
	fi
	grep -qF -- "$expected" "$tmp/refused.log" ||
		{ cat "$tmp/refused.log" >&2; die "refused without saying \"$expected\": $what"; }
}
base=(template svc "$chart" -f "$chart/ci/defaults-values.yaml" --set-file keyring.json="$tmp/keyring.json")
refused "a worker grace period within the drain" "worker.terminationGracePeriodSeconds (40) must exceed" \
	"$HELM" "${base[@]}" --set worker.terminationGracePeriodSeconds=40
refused "a drain longer than the grace period given" "must exceed the 130 s" \
	"$HELM" "${base[@]}" --set worker.terminationGracePeriodSeconds=100 --set config.worker.drain_seconds=120
refused "a listener set in config" "config.server.listen is set by the chart" \
	"$HELM" "${base[@]}" --set config.server.listen=:9999
refused "a database URL in config" "config.database.url is set by the chart" \
	"$HELM" "${base[@]}" --set config.database.url=postgres://x
refused "no key ring" "keyring.existingSecret or keyring.json is required" \
	"$HELM" template svc "$chart" -f "$chart/ci/defaults-values.yaml"
refused "a misspelt value" "replica" \
	"$HELM" "${base[@]}" --set worker.replica=3
refused "a file object store" "object_store/url" \
	"$HELM" "${base[@]}" --set config.object_store.url=file:///data
sed 's/readOnlyRootFilesystem:/readOnlyRootFileSystem:/' "$tmp/defaults.yaml" >"$tmp/mutated.yaml"
refused "an unknown manifest field" "unknown field" "$CHECK" manifests <"$tmp/mutated.yaml"
sed 's/name: SVC_REDIS__URL/name: SVC_REDIS__URL\n              valueFrom: {secretKeyRef: {name: svc-nope, key: url}}\n            - name: X/' "$tmp/defaults.yaml" >"$tmp/mutated.yaml"
refused "a Secret that is not rendered" "svc-nope" "$CHECK" manifests <"$tmp/mutated.yaml"
sed 's/stop_grace_period: 45s/stop_grace_period: 40s/' docker-compose.yaml >"$tmp/docker-compose.yaml"
cp Dockerfile "$tmp/Dockerfile"
refused "a worker stopped before its drain (compose)" "stop_grace_period" "$CHECK" compose "$tmp/docker-compose.yaml"
sed 's/^USER 65532:65532$/USER root/' Dockerfile >"$tmp/Dockerfile.root"
refused "a root user (Dockerfile)" "USER" "$CHECK" dockerfile "$tmp/Dockerfile.root"
log "every artifact is valid, and the broken variants are refused"
