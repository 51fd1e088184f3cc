# The runtime image, two ways to fill it:
# - `docker build .` compiles the binary in a Rust toolchain image (the `build` stage)
#   and copies it into the runtime (the last stage, the default);
# - `docker build --target runtime -f Dockerfile DIR`, with DIR holding a `cinder-attach`
#   built outside on Debian bookworm (`cargo build --release`), takes that binary: for a
#   machine that reaches Debian's mirror but no container registry or crates.io from
#   inside a container (scripts/container-check does this). Only the stages up to the
#   target are built, so `runtime` comes before `build`.
FROM debian:bookworm-slim AS base
# The system's CA roots, for a Keystone behind https; librbd1 (with librados2) for an
# `rbd` backend, loaded when one connects; qemu-utils for images that are not raw.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates librbd1 qemu-utils \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/cinder-attach --create-home cinder \
 && mkdir -p /var/lib/cinder-attach/data && chown cinder:cinder /var/lib/cinder-attach/data
USER cinder
WORKDIR /var/lib/cinder-attach
# noauth is for loopback only: in a container, choose an auth strategy (or, for a local
# experiment, --allow-insecure-noauth) and a PostgreSQL database for anything shared.
# The host name is every volume's home (host@backend#pool): a container's own name
# changes when it is re-created, so it is fixed here (override it per deployment).
ENV CINDER_ATTACH_LISTEN=0.0.0.0:8776 \
    CINDER_ATTACH_HOST=cinder-attach \
    CINDER_ATTACH_DATABASE_URL=sqlite:///var/lib/cinder-attach/data/cinder-attach.db \
    CINDER_ATTACH_BACKENDS=file=file,dir=/var/lib/cinder-attach/data/volumes
# The SQLite database and the volume files: keep them across re-creations.
VOLUME ["/var/lib/cinder-attach/data"]
EXPOSE 8776
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/cinder-attach", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/cinder-attach"]
CMD ["serve"]

# A binary built outside, from the build context.
FROM base AS runtime
COPY cinder-attach /usr/local/bin/cinder-attach

# Compile with the Rust toolchain.
FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
# SQLite's compile-time options (SQLITE_DEFAULT_MEMSTATUS=0 and friends).
COPY .cargo ./.cargo
COPY src ./src
COPY migrations ./migrations
# The manifest names the load generator's sources too (it is not built here).
COPY bench/loadgen ./bench/loadgen
# The commit `--version` names (the context holds no .git): docker build --build-arg
# CINDER_ATTACH_BUILD_COMMIT=$(git rev-parse --short=12 HEAD) .
ARG CINDER_ATTACH_BUILD_COMMIT=unknown
RUN cargo build --release --locked --bin cinder-attach

# The default: the runtime with the binary compiled above.
FROM base
COPY --from=build /src/target/release/cinder-attach /usr/local/bin/cinder-attach
