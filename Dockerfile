# The svc container image: one static binary on an empty base, run as a
# numeric non-root user. Every role runs from it (`run --role control|worker|all`),
# and so do the one-shot commands (`migrate`, `keyring`, `bootstrap`).
#
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" -t svc .
#
# The choices (base image, user, no HEALTHCHECK) are in
# docs/decisions/0057-deployment-artifacts.md; scripts/check-deploy.sh lints this
# file and builds its binary the same way (`make static`) to check that it is static.

# GO_IMAGE is the Go toolchain the binary is built with: the version CI uses.
ARG GO_IMAGE=golang:1.26.8-bookworm

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# No cgo: a statically linked binary that needs no C library in the final image.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS="$TARGETOS" GOARCH="$TARGETARCH" make static VERSION="$VERSION" STATIC_OUT=/out/usr/local/bin/svc
# What the binary needs around it: CA certificates (S3, model vendors, SMTP),
# the service user and group, its working directory (the key ring's volume is
# mounted below it in docker-compose.yaml) and a /tmp.
RUN mkdir -p /out/etc/ssl/certs /out/tmp /state/svc/keyring \
    && cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/ca-certificates.crt \
    && echo 'svc:x:65532:65532:svc:/var/lib/svc:/sbin/nologin' >/out/etc/passwd \
    && echo 'svc:x:65532:' >/out/etc/group \
    && chmod 1777 /out/tmp

FROM scratch
ARG VERSION=dev
LABEL org.opencontainers.image.title="svc" \
      org.opencontainers.image.description="Configures and runs AI agents for many workspaces" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/ /
COPY --from=build --chown=65532:65532 /state/ /var/lib/
ENV PATH=/usr/local/bin
USER 65532:65532
WORKDIR /var/lib/svc
# 8080: server.listen (the API, the console, /healthz and /readyz).
# 9090: metrics.listen, when it is set to ":9090".
EXPOSE 8080 9090
# No HEALTHCHECK: the image has no shell and no HTTP client to run one.
# Orchestrators probe GET /healthz (liveness) and GET /readyz (readiness).
ENTRYPOINT ["/usr/local/bin/svc"]
CMD ["run", "--role", "all"]
