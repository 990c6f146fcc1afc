import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

/**
 * Writes the answers that one turn of the event loop finished together, at the end of
 * that turn, instead of each right after its request was read.
 *
 * Node reads every socket that became readable in one poll phase, and a request served
 * from memory is answered within its own read callback. Written there, each answer
 * lands while the client is idle again and has to wake it: on a loaded host that wake-up
 * costs more than the route (docs/edge.md; the benchmark's X-P2-uncoalesced). Deferred with
 * `setImmediate`, the answers of one poll phase go out back to back in the check phase
 * that follows it, and the client wakes once for all of them. An idle server loses
 * nothing: the check phase comes right after the poll phase that read the request (an
 * answer finished inside a timer or an immediate waits one more, non-blocking, turn).
 */
export const coalesceWritesPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onSend', (_request, reply, payload, done) => {
      setImmediate(() => {
        // `done` writes the answer. Called in the hook, a throw there (a header Node refuses)
        // reached Fastify's hook runner, which answers 500; from here it would be uncaught.
        try {
          done(null, payload);
        } catch (error) {
          // An answer already on its way (a handler that sent and then returned nothing, so
          // Fastify sent again) stays as it is; anything else is answered as Fastify would.
          if (reply.raw.headersSent) reply.log.warn({ err: error }, 'a second answer to a request was dropped');
          else done(error as Error);
        }
      });
    });
  },
  { name: 'vouch-coalesce-writes' },
);
