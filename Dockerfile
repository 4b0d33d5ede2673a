# syntax=docker/dockerfile:1
# One image for every stage: `sleuth serve --stages planner`, `sleuth ask`, `sleuth ingest`, `sleuth setup`.
#
#   docker build -t sleuth .
#   docker run --rm sleuth ask "Which anime is Luffy in?"        # embedded: no services needed
#
# Dependencies are compiled in their own layer (cargo-chef), so a change to sleuth's code rebuilds only sleuth.
#
# The embedding model (all-MiniLM-L6-v2, 91 MB) is baked in by `sleuth models pull` at build time rather than
# fetched by an init container: every replica of retrieve and intake needs it at start-up, a scale-out must not
# wait on (or be broken by) the Hugging Face Hub, clusters often have no egress to it at all, and the pull
# verifies checksums once, at build time, where a failure stops the build instead of a pod. The cost is 91 MB
# per image, shared by every stage's pods through the node's layer cache.

ARG RUST_VERSION=1.95
FROM rust:${RUST_VERSION}-slim-bookworm AS chef
RUN apt-get update && apt-get install -y --no-install-recommends pkg-config libssl-dev ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && cargo install cargo-chef --locked --version ^0.1
WORKDIR /src

FROM chef AS planner
COPY . .
RUN cargo chef prepare --recipe-path recipe.json

FROM chef AS builder
COPY --from=planner /src/recipe.json recipe.json
RUN cargo chef cook --release --recipe-path recipe.json -p sleuth-actors
COPY . .
RUN cargo build --release -p sleuth-actors --bin sleuth \
    && install -m 0755 target/release/sleuth /usr/local/bin/sleuth
# Bake the embedding model into /models (checksums verified by the pull).
RUN SLEUTH__EMBEDDER__MODEL_DIR=/models sleuth models pull

FROM debian:bookworm-slim AS runtime
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libssl3 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/sleuth --create-home sleuth
COPY --from=builder /usr/local/bin/sleuth /usr/local/bin/sleuth
COPY --from=builder /models /models
ENV SLEUTH__EMBEDDER__MODEL_DIR=/models \
    SLEUTH__DATA_DIR=/var/lib/sleuth \
    SLEUTH__TELEMETRY__HTTP_ADDR=0.0.0.0:9464 \
    RUST_LOG=info
USER 10001:10001
WORKDIR /var/lib/sleuth
EXPOSE 9464
# `sleuth healthcheck` asks this process's /readyz (the slim image has no curl).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["sleuth", "healthcheck"]
ENTRYPOINT ["sleuth"]
CMD ["--help"]
