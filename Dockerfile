# Build the demiurge binary, then run it on a slim base.
FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin demiurge

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates git python3 python3-yaml && rm -rf /var/lib/apt/lists/* \
    && useradd --system --home /var/lib/demiurge --create-home demiurge
COPY --from=build /src/target/release/demiurge /usr/local/bin/demiurge
USER demiurge
ENV DEMIURGE_HOME=/var/lib/demiurge DEMIURGE_BIND=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["demiurge"]
CMD ["serve"]
