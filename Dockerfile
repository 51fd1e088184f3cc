# Multi-stage build: compile with the Rust toolchain, run on a slim Debian as non-root.
FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY migrations ./migrations
# The manifest names the load generator's sources too (it is not built here).
COPY bench/loadgen ./bench/loadgen
RUN cargo build --release --locked --bin cinder-attach

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home-dir /var/lib/cinder-attach --create-home cinder
COPY --from=build /src/target/release/cinder-attach /usr/local/bin/cinder-attach
USER cinder
WORKDIR /var/lib/cinder-attach
# noauth is for loopback only: in a container, choose an auth strategy (or, for a local
# experiment, --allow-insecure-noauth) and a PostgreSQL database for anything shared.
ENV CINDER_ATTACH_LISTEN=0.0.0.0:8776 \
    CINDER_ATTACH_DATABASE_URL=sqlite:///var/lib/cinder-attach/data/cinder-attach.db
EXPOSE 8776
ENTRYPOINT ["/usr/local/bin/cinder-attach"]
CMD ["serve"]
