# syntax=docker/dockerfile:1
# Vouch: one image for the API, the worker and the migration job (processes bundled by esbuild at build).
#   docker build -t vouch .
#   docker run --rm -p 3000:3000 vouch                              # API (default CMD)
#   docker run --rm vouch npm run start:worker                       # worker
#   docker run --rm -e DATABASE_URL=postgres://... vouch npm run db:migrate
# Node 22, the oldest supported LTS line (engines: ^22.12.0 || >=24.0.0), because it is the line .ci/run
# tests on every run and @types/node targets. 24 passes the suite too: move image and CI to it together.
FROM node:22-bookworm-slim

# NODE_ENV is left unset on purpose (it switches defaults such as AUTH); set it at run time.
ENV HOST=0.0.0.0 \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false

WORKDIR /app
RUN chown node:node /app
USER node

# Manifests first so the dependency layer is cached until a package.json or the lockfile changes.
# Every workspace manifest is needed for `npm ci` to link the @vouch/* workspaces.
COPY --chown=node:node package.json package-lock.json ./
COPY --chown=node:node apps/api/package.json apps/api/
COPY --chown=node:node apps/worker/package.json apps/worker/
COPY --chown=node:node packages/config/package.json packages/config/
COPY --chown=node:node packages/core/package.json packages/core/
COPY --chown=node:node packages/db/package.json packages/db/
COPY --chown=node:node packages/jobs/package.json packages/jobs/
COPY --chown=node:node packages/runtime/package.json packages/runtime/
COPY --chown=node:node packages/schemas/package.json packages/schemas/
COPY --chown=node:node packages/testkit/package.json packages/testkit/
COPY --chown=node:node packages/x402/package.json packages/x402/
COPY --chown=node:node examples/x402-server/package.json examples/x402-server/

# Dev dependencies are installed on purpose: esbuild bundles the processes, tsx runs the CLIs.
RUN npm ci --include=dev && npm cache clean --force

COPY --chown=node:node . .
RUN npm run build

EXPOSE 3000
CMD ["npm", "start"]
