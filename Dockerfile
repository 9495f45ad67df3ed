# syntax=docker/dockerfile:1
# Build: the same steps as CI (.ci/run): Bun from npm, packages from the lockfile (whose postinstall
# fetches the offline model through the npm registry), then `bun run build` -> dist/sku-search.
FROM node:20-bookworm-slim AS build
ARG BUN_VERSION=1.4.5
RUN npm install -g --silent "bun@${BUN_VERSION}"
WORKDIR /src
COPY package.json bun.lock bunfig.toml .npmrc ./
COPY patches/ patches/
# Packages first (a layer that changes only with the lockfile); the model's install script needs the
# sources, so it runs after they are copied.
RUN bun install --frozen-lockfile --ignore-scripts
COPY . .
RUN bun scripts/install-model.ts && bun run build

# Run: only the executable. It embeds everything (PGlite, pgvector, the model, onnxruntime) and on
# first start writes the model and onnxruntime's native library (about 100 MB) to /tmp, once
# (with `docker run --read-only`, mount a tmpfs without noexec there: `--tmpfs /tmp:exec`).
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /data --no-create-home sku \
 && mkdir /data && chown sku:sku /data
COPY --from=build /src/dist/ /app/
USER sku
WORKDIR /data
ENV DATA_DIR=/data PORT=8000 HOST=0.0.0.0
VOLUME /data
EXPOSE 8000
# `healthcheck` asks the local service for GET /, which answers 200 only after a database round trip.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["/app/sku-search", "healthcheck"]
ENTRYPOINT ["/app/sku-search"]
