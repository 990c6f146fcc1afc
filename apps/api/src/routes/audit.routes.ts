import { Readable } from 'node:stream';
import type { Services } from '@vouch/core';
import { auditExportQuery, auditList, auditQuery } from '@vouch/schemas';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ok, responses } from '../http.ts';
import { actorOf } from '../plugins/auth.ts';

const adminOnly = { scope: 'admin', alwaysAuthenticate: true } as const;

/** `/api/audit`: the organization's hash-chained log of every write. */
export const auditRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/api/audit', {
    config: adminOnly,
    schema: {
      operationId: 'listAudit',
      tags: ['organizations'],
      summary: 'The organization’s audit log, newest first (paginated; filters: action, target, actorKeyId, from, to)',
      querystring: auditQuery,
      response: responses({ 200: auditList }, { 404: ['NOT_FOUND'] }),
    },
    handler: async (req) => ok(await services.audit.list(actorOf(req), req.query)),
  });

  app.get('/api/audit/export', {
    config: adminOnly,
    schema: {
      operationId: 'exportAudit',
      tags: ['organizations'],
      summary:
        'The whole chain, oldest first, as JSON lines (application/x-ndjson): each line’s hash can be checked with sha256',
      querystring: auditExportQuery,
      response: {
        ...responses({}, { 404: ['NOT_FOUND'] }),
        200: {
          description: 'application/x-ndjson: one `{organizationId, seq, createdAt, entry, prevHash, hash}` per line',
          content: { 'application/x-ndjson': { schema: z.string() } },
        },
      },
    },
    handler: async (req, reply) => {
      const lines = services.audit.exportLines(actorOf(req), req.query.organizationId);
      // The first page is read before the answer starts, so a refusal or an outage is still an envelope.
      const first = await lines.next();
      async function* rest() {
        if (!first.done) yield first.value;
        yield* lines;
      }
      reply.type('application/x-ndjson; charset=utf-8');
      // A stream of lines, sent as is (the schema above only describes it).
      return reply.send(Readable.from(rest()) as unknown as string);
    },
  });
};
