# The service with its embedded engines. Build: docker build -t voicecall .
# Run: docker run -p 8080:8080 -e PUBLIC_URL=https://calls.example.com -v voicecall-data:/data voicecall
FROM node:20-bookworm-slim

# Build tools for native addons (better-sqlite3 builds from source against the image's Node headers).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY scripts ./scripts
# The native addons (pocketsphinx, flite) are built by the set-up, so their sources come first.
COPY native ./native
# The set-up installs the speech engines' Debian packages (root here) and runs npm ci.
RUN node scripts/setup.mjs --runtime && rm -rf /var/lib/apt/lists/*

COPY . .

RUN useradd --system --uid 10001 --home /app voicecall && mkdir -p /data && chown voicecall /data
USER voicecall

# WORKERS (service processes) defaults to the cores Node sees; set it to the container's CPU limit.
ENV HOST=0.0.0.0 PORT=8080 DATA_DIR=/data NODE_ENV=production
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s CMD node -e "fetch('http://127.0.0.1:'+process.env.PORT+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "--initial-old-space-size=256", "--import", "tsx", "src/main.ts"]
