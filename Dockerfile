# Build: Bun from the npm registry, the packages from the lockfile, the offline model, then
# `bun run build --assets-beside` -> dist/sku-search and dist/sku-search-assets/ (see README).
FROM debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
# Bun trusts the system's certificates too (a company proxy's CA added to the base image included).
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
# Bun's Linux build, the package its npm installer `bun` would fetch: change the version and both
# sha512 sums together (`npm view @oven/bun-linux-x64@<version> dist.integrity`, base64 -> hex).
ARG BUN_VERSION=1.4.5
ARG BUN_SHA512_AMD64=2165fd0442e8187014b4ca2791e49a35a6705f3464fa80f0e8c93e1c115777728760804d06c20646ea4c64f7203680db2692eeea00098c8a0854f66db75689d6
ARG BUN_SHA512_ARM64=e015e6b122a78ceae5196a99578c7fa166bb015a11f81ea509775d3333805c1226dede747ac960f706faea09ad5b501a984435975083be69abbb2b0486a39632
RUN set -eu; \
    case "$(dpkg --print-architecture)" in \
      amd64) package=bun-linux-x64; sum=$BUN_SHA512_AMD64 ;; \
      arm64) package=bun-linux-aarch64; sum=$BUN_SHA512_ARM64 ;; \
      *) echo "no Bun build for $(dpkg --print-architecture)" >&2; exit 1 ;; \
    esac; \
    curl -fsSL -o /tmp/bun.tgz "https://registry.npmjs.org/@oven/$package/-/$package-$BUN_VERSION.tgz"; \
    echo "$sum  /tmp/bun.tgz" | sha512sum -c -; \
    tar -xzf /tmp/bun.tgz -C /usr/local/bin --strip-components=2 package/bin/bun; \
    rm /tmp/bun.tgz; \
    bun --version
WORKDIR /src
# Each layer is redone only when what it copies changes: the model (a package from the registry)
# with its installer, the packages with the lockfile, the executable with the sources.
COPY scripts/install-model.ts scripts/
COPY src/adapters/providers/local-model-files.ts src/adapters/providers/
RUN bun scripts/install-model.ts
COPY package.json bun.lock bunfig.toml .npmrc ./
COPY patches/ patches/
RUN bun install --frozen-lockfile --ignore-scripts
COPY tsconfig.json ./
COPY scripts/build.ts scripts/
COPY src/ src/
RUN bun run build --assets-beside

# Run: the executable, with the model, onnxruntime and pgvector laid out beside it (nothing is
# written at startup but the database, in /data), and Apertium, which the service runs from PATH
# to translate Spanish queries.
FROM debian:bookworm-slim
COPY NOTICE /app/NOTICE
# Apertium is GPL-2: /app/NOTICE says where its source is and lists every Debian source package here.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates apertium apertium-eng-spa \
 && rm -rf /var/lib/apt/lists/* \
 && dpkg-query -W -f '${source:Package} ${source:Version}\n' | sort -u >> /app/NOTICE \
 && useradd --system --uid 10001 --user-group --home-dir /data --no-create-home sku \
 && mkdir /data && chown sku:sku /data
LABEL org.opencontainers.image.title="sku-search" \
      org.opencontainers.image.description="Semantic product search; includes Apertium (GPL-2) from Debian packages, sources: see /app/NOTICE"
COPY --from=build /src/dist/ /app/
USER sku
WORKDIR /data
ENV DATA_DIR=/data PORT=8000 HOST=0.0.0.0
VOLUME /data
EXPOSE 8000
# `healthcheck` asks the local service for GET /, which answers 200 only after a database round trip.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["/app/sku-search", "healthcheck"]
ENTRYPOINT ["/app/sku-search"]
