# svc: `make run` starts a development service; `make test` runs every test.
# Both install and start what is missing (PostgreSQL and Redis; for the tests also
# an S3-compatible server and Chromium for the API-page test) on a Debian machine
# with Go.

SHELL := /bin/bash
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/svcdev/svc/internal/buildinfo.Version=$(VERSION)
# The code generators are pinned in tools/go.mod, apart from the service's graph.
GOTOOL := go tool -modfile=tools/go.mod
# sqlc's parser uses cgo.
export CGO_ENABLED ?= 1

.PHONY: all build static install check-deploy run test bench bench/go bench/agents bench/assets bench/outbox bench/streams bench/runs bench/bodies generate generate/api generate/sqlc check-generated check-history check-examples lint-contract vet fmt services clean

all: build

build:
	go build -ldflags "$(LDFLAGS)" -o bin/svc ./cmd/svc

## static: the binary of the container image (Dockerfile): no cgo, so statically
## linked, stripped, with the version stamped; GOOS and GOARCH pick the platform
STATIC_OUT ?= bin/svc-static
static:
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS) -s -w" -o $(STATIC_OUT) ./cmd/svc

## check-deploy: lint and validate the Dockerfile, docker-compose.yaml and the Helm
## chart without a container engine or a cluster (scripts/check-deploy.sh)
check-deploy:
	scripts/check-deploy.sh

## install: build svc with the version stamp into Go's install directory: $GOBIN,
## else the first entry of $GOPATH plus /bin (usually ~/go/bin); says where, and
## how to put it on the PATH when it is not
install:
	go install -ldflags "$(LDFLAGS)" ./cmd/svc
	@dir=$$(go env GOBIN); [ -n "$$dir" ] || dir=$$(go env GOPATH | cut -d: -f1)/bin; \
	echo "installed $$dir/svc ($(VERSION))"; \
	case ":$$PATH:" in *":$$dir:"*) ;; \
	*) echo "$$dir is not on your PATH: add it, e.g. export PATH=\"$$dir:\$$PATH\" in ~/.profile," \
		"or copy the binary: sudo install -m 0755 $$dir/svc /usr/local/bin/svc" ;; esac

## run: start svc on a local development setup (made under .dev/ on first use)
run:
	scripts/run.sh

## test: start PostgreSQL, Redis and the S3 server if needed, then run every test with the race detector
test:
	scripts/test.sh

## bench: measure the service against the machine's own ceilings
bench:
	scripts/bench.sh

## bench/go: the Go micro-benchmarks (sealing, the JSON guard)
bench/go:
	go test -run '^$$' -bench . -benchmem ./internal/keyring ./internal/jsonguard

## bench/agents: publish latency and label-filtered lists over 100,000 agents (needs TEST_DATABASE_URL)
bench/agents:
	go test -v -run '^$$' -bench 'BenchmarkPublish|BenchmarkListThreeLabels' -benchtime 2s ./internal/agent

## bench/assets: upload 100 MiB assets through the API to the file store and to S3
## (memory and throughput against the targets of docs/performance.md)
bench/assets:
	scripts/services.sh start
	eval "$$(scripts/services.sh env)" && go test -run '^$$' -bench BenchmarkAssetUpload -benchtime 5x -count 1 ./internal/httpapi

## bench/outbox: webhook delivery through the engine (defaults and raised), a healthy
## endpoint's latency beside 20 hung ones, the
## engine beside 1,000,000 settled rows, and purging 1,000,000 rows under a sender
bench/outbox:
	scripts/services.sh start
	eval "$$(scripts/services.sh env)" && go test -run '^$$' -bench BenchmarkSustainedDelivery -benchtime 2x -count 1 ./internal/webhook
	eval "$$(scripts/services.sh env)" && go test -run '^$$' -bench BenchmarkHealthyBesideHungEndpoints -benchtime 200x -count 1 ./internal/webhook
	eval "$$(scripts/services.sh env)" && go test -v -run '^$$' -bench 'BenchmarkDeliverNoop|BenchmarkPurgeMillion' -benchtime 2x -count 1 -timeout 40m ./internal/outbox

## bench/streams: 2,000 SSE clients on one control process (one thread, and a
## thread each); its resident memory against the target of docs/performance.md
bench/streams: build
	scripts/services.sh start
	eval "$$(scripts/services.sh env)" && BENCH_SVC_BIN=$(CURDIR)/bin/svc go test -v -run '^$$' -bench BenchmarkThreadStreams -benchtime 1x -count 1 -timeout 20m ./internal/httpapi

## bench/bodies: 200 slow request bodies without credentials on one control process
## (how long they are held, how much the resident set grows)
bench/bodies: build
	scripts/services.sh start postgres redis
	eval "$$(scripts/services.sh env)" && BENCH_SVC_BIN=$(CURDIR)/bin/svc go test -v -run '^$$' -bench BenchmarkSlowBodies -benchtime 1x -count 1 -timeout 10m ./internal/httpapi

## bench/runs: the runs engine on PostgreSQL and both object stores: overhead per
## step and its parts, with tracing off and on, 1,000 runs of 5 steps on one worker of 32 slots, and how
## soon a crashed worker's run resumes, how soon a run starts beside a noisy
## workspace, what a subagent start costs, and a worker's peak memory while a
## model streams 200 MB (docs/performance.md, "Runs engine", "Fair claims",
## "Subagent bounds", "Bounded model output")
bench/runs:
	scripts/services.sh start
	eval "$$(scripts/services.sh env)" && go test -v -run '^$$' -bench 'BenchmarkStepOverhead|BenchmarkEngineParts' -benchtime 20x -count 1 ./internal/worker
	eval "$$(scripts/services.sh env)" && go test -v -run '^$$' -bench BenchmarkStepTracing -benchtime 20x -count 3 ./internal/worker
	eval "$$(scripts/services.sh env)" && go test -v -run '^$$' -bench BenchmarkThousandRuns -benchtime 1x -count 1 -timeout 30m ./internal/worker
	eval "$$(scripts/services.sh env)" && go test -v -run '^$$' -bench BenchmarkCrashResume -benchtime 5x -count 1 -timeout 30m ./internal/worker
	eval "$$(scripts/services.sh env)" && go test -run '^$$' -bench BenchmarkStartChild -benchtime 200x -count 1 ./internal/run
	eval "$$(scripts/services.sh env)" && go test -v -run '^$$' -bench BenchmarkFloodingModelWorkerRSS -benchtime 1x -count 1 -timeout 10m ./internal/worker
	eval "$$(scripts/services.sh env)" && go test -v -run '^$$' -bench BenchmarkNoisyNeighbour -benchtime 20x -count 1 ./internal/worker

## generate: regenerate gen/ from openapi/openapi.yaml and sql/
generate: generate/api generate/sqlc

generate/api:
	$(GOTOOL) oapi-codegen -config oapi-codegen.yaml openapi/openapi.yaml
	$(GOTOOL) oapi-codegen -config openapi/oapi-codegen-client.yaml openapi/openapi.yaml
	go run ./scripts/openapijson openapi/openapi.yaml gen/openapi

generate/sqlc:
	$(GOTOOL) sqlc generate

## check-generated: fail when gen/ differs from what the sources generate
check-generated: generate
	@git diff --exit-code --stat -- gen || { echo "gen/ is stale: run 'make generate' and commit the result" >&2; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- gen); \
	if [ -n "$$untracked" ]; then echo "untracked generated files (commit them):" >&2; echo "$$untracked" >&2; exit 1; fi

## check-history: fail when a comment or a document speaks of the project's history
## or of documents outside the repository (CONTRIBUTING.md, "Comments and docs")
check-history:
	scripts/check-history.sh

## lint-contract: lint openapi/openapi.yaml with Redocly CLI and Spectral (every warning
## fatal), and type-check what openapi-typescript generates from it (needs Node.js and npm;
## the pinned tools are installed under tools/npm by the script)
lint-contract:
	scripts/lint-contract.sh

## check-examples: the client examples of docs/examples (Go and TypeScript) built,
## type-checked and run against a real svc (scripts/check-examples.sh; make test runs
## the same test)
check-examples:
	scripts/check-examples.sh

## vet: go vet on the service's module and on the Go client example's own module
vet:
	go vet ./...
	cd docs/examples/go && go vet ./...

fmt:
	gofmt -l -w $$(git ls-files '*.go' | grep -v '^gen/')

services:
	scripts/services.sh start

clean:
	rm -rf bin
