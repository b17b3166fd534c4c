# The trainsync worker image. The CLI is built into dist/ once, at image build time (the
# bundle step of `npm run build`: esbuild is a dependency, the type check's tsc is not), and
# bin/trainsync.js runs it. The install layer's `prepare` builds nothing: no sources yet.
FROM node:22-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY vendor ./vendor
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
COPY jobs ./jobs
COPY sql ./sql
COPY examples ./examples
RUN node bin/build.js
# Not root, by number: a platform that requires a non-root user (Kubernetes' runAsNonRoot)
# can only check a numeric one. 1000 is the image's `node`; it owns nothing under /app, so the
# code cannot be changed by the process that runs it.
USER 1000:1000
# A read-only root filesystem works: the worker writes no file. The one thing it puts in the
# temporary folder is V8's compile cache (a faster start); give it /tmp as a tmpfs (compose
# does), or it starts without the cache.
ENV TMPDIR=/tmp
# trainsync binds loopback by default; in a container that would be unreachable, so every
# listener here binds every interface of the container. Publish the ports with care (the
# compose file publishes them on the host's 127.0.0.1 only) and set TRAINSYNC_METRICS_TOKEN.
ENV TRAINSYNC_METRICS_HOST=0.0.0.0 \
    TRAINSYNC_WEBHOOK_HOST=0.0.0.0 \
    TRAINSYNC_SCIM_HOST=0.0.0.0 \
    TRAINSYNC_CONSOLE_HOST=0.0.0.0
EXPOSE 9464 9465 9466 9467
# /healthz: 200 while Postgres and Redis answer (it never needs TRAINSYNC_METRICS_TOKEN).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 CMD node -e "fetch('http://127.0.0.1:'+(process.env.TRAINSYNC_METRICS_PORT||9464)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "bin/trainsync.js"]
CMD ["worker"]
