# syntax=docker/dockerfile:1
#
# hookgate container image.
#
#   docker build -t hookgate:0.1.0 .
#
# Final image: gcr.io/distroless/cc-debian12:nonroot rather than a static musl
# build on scratch. The builder is Debian bookworm, the same glibc as
# distroless' debian12, so the ordinary glibc build runs there unchanged: no
# cross C toolchain for crates that compile C, and glibc's allocator instead
# of musl's, which is markedly slower under a multi-threaded Tokio runtime.
# The distroless image still has no shell and no package manager, and ships
# CA certificates and tzdata. It runs as uid/gid 65532 ("nonroot").
#
# There is no shell in the final image, so there is no HEALTHCHECK: health is
# checked by the orchestrator over HTTP on the admin port (/healthz, /readyz);
# see docs/kubernetes.md.

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS builder
WORKDIR /src

# Dependencies first, in their own layer: it is rebuilt only when Cargo.toml
# or Cargo.lock change. Empty stand-ins for the library and binary roots let
# cargo build every dependency without the real sources.
COPY Cargo.toml Cargo.lock ./
RUN mkdir src \
 && echo 'fn main() {}' > src/main.rs \
 && touch src/lib.rs \
 && cargo build --release --locked \
 && rm -rf src

# The real sources. Touch the crate roots so cargo rebuilds the crate instead
# of trusting the stand-ins' fingerprints (COPY keeps the files' mtimes).
COPY src ./src
RUN touch src/main.rs src/lib.rs \
 && cargo build --release --locked \
 && cp target/release/hookgate /hookgate

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=builder /hookgate /hookgate
USER 65532:65532
# 8080: webhooks (server.listen); 9090: /healthz /readyz /metrics (admin.listen)
EXPOSE 8080 9090
ENTRYPOINT ["/hookgate"]
CMD ["run", "--config", "/etc/hookgate/config.toml"]
