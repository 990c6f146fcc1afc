import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { DomainError, errorStatus } from '@vouch/core';
import { isDatabaseBusy, isDatabaseUnavailable, sqlState } from '@vouch/db';
import { DomainJobError, JobsUnavailableError } from '@vouch/jobs';
import type { ErrorCode } from '@vouch/schemas';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { NotIJsonError } from '../json-body.ts';

/** Framework errors that are the client's fault, by Fastify code. */
const frameworkCodes: Record<string, { code: ErrorCode; message?: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Content-Type must be application/json' },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'INVALID_JSON', message: 'request body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    code: 'INVALID_JSON',
    message: 'request body is empty but Content-Type is application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'VALIDATION_ERROR', message: 'Content-Length does not match the body' },
};

/**
 * Fastify's own refusals before routing (a URL with bad percent-encoding), in the failure
 * envelope; the URL is not echoed back.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  // No hook runs for these, the metrics' included: an uncounted scanner's probes would go unseen.
  request.server.observeUnrouted?.(request, reply);
  if (error.code === 'FST_ERR_BAD_URL') {
    return sendFailure(reply, request, 'VALIDATION_ERROR', 'the URL is not valid (bad percent-encoding)', [
      { path: 'url', message: 'bad percent-encoding' },
    ]);
  }
  return sendFailure(reply, request, 'VALIDATION_ERROR', 'the request could not be routed');
}

/** What Node's HTTP parser refuses before Fastify sees a request: status and envelope code. */
const clientErrors: Record<string, { status: number; code: ErrorCode; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    code: 'HEADERS_TOO_LARGE',
    message: 'the request line and headers exceed the server limit (16 KiB)',
  },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, code: 'REQUEST_TIMEOUT', message: 'the request did not arrive in time' },
};

/**
 * Connection-level refusals (headers or URL too large, a request that never completes, a
 * malformed request line) answered in the failure envelope, then the connection is closed.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket) {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const known = (error.code && clientErrors[error.code]) || {
    status: 400,
    code: 'VALIDATION_ERROR' as const,
    message: 'the request is not valid HTTP',
  };
  if (socket.writable) {
    // The request was never read, so its own X-Request-Id is unknown: a fresh one, in the header
    // and in the envelope, as on every other answer.
    const requestId = randomUUID();
    const body = JSON.stringify({ success: false, error: { code: known.code, message: known.message, requestId } });
    socket.write(
      `HTTP/1.1 ${known.status} ${STATUS_CODES[known.status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

export function sendFailure(
  reply: FastifyReply,
  request: FastifyRequest,
  code: ErrorCode,
  message: string,
  details?: unknown,
) {
  const status = errorStatus[code];
  if (status === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', '1');
  // A 401 names the scheme to authenticate with (RFC 9110), also when a service refuses a key
  // the edge let through (one revoked on another replica, still in this one's cache).
  if (status === 401 && !reply.hasHeader('www-authenticate')) reply.header('www-authenticate', 'Bearer realm="vouch"');
  // Set by the onRequest hook, which a refusal before routing (a bad URL) never reaches.
  if (!reply.hasHeader('x-request-id')) reply.header('x-request-id', String(request.id));
  return reply.code(status).send({
    success: false,
    error: { code, message, ...(details !== undefined && { details }), requestId: String(request.id) },
  });
}

/** The one place errors become HTTP responses: the failure envelope (docs/api.md). */
export const errorsPlugin = fp(async (app: FastifyInstance) => {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof DomainError) {
      return sendFailure(reply, request, error.code, error.message, error.details);
    }
    if (error instanceof DomainJobError) {
      const { code, message, details } = error.encoded;
      const known = (code in errorStatus ? code : 'INTERNAL_ERROR') as ErrorCode;
      return sendFailure(reply, request, known, message, details);
    }
    if (error instanceof JobsUnavailableError) {
      request.log.warn({ err: error.cause }, 'job queue unavailable');
      return sendFailure(reply, request, 'SERVICE_UNAVAILABLE', error.message);
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      const context = error.validationContext ?? 'body';
      const details = error.validation.map((issue) => ({
        path: [context, ...issue.instancePath.split('/').filter(Boolean)].join('.'),
        message: issue.message,
      }));
      return sendFailure(reply, request, 'VALIDATION_ERROR', 'request does not match the schema', details);
    }
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      // The limit this route applies (BODY_LIMIT_BYTES), in its message.
      const limit = request.routeOptions.bodyLimit;
      return sendFailure(reply, request, 'PAYLOAD_TOO_LARGE', `request body exceeds the ${limit}-byte limit`);
    }
    const known = error.code ? frameworkCodes[error.code] : undefined;
    if (known) return sendFailure(reply, request, known.code, known.message ?? error.message);
    if (error instanceof NotIJsonError) {
      return sendFailure(reply, request, 'INVALID_JSON', `request body is not valid I-JSON: ${error.message}`);
    }
    if (error instanceof SyntaxError || (error.statusCode === 400 && /JSON|prototype/i.test(error.message))) {
      return sendFailure(reply, request, 'INVALID_JSON', 'request body is not valid JSON');
    }
    if (
      isDatabaseUnavailable(error) ||
      isDatabaseBusy(error) ||
      (error as { code?: string }).code === 'SERVICE_UNAVAILABLE'
    ) {
      request.log.warn({ err: error }, 'dependency unavailable');
      return sendFailure(reply, request, 'SERVICE_UNAVAILABLE', 'a dependency is unavailable; retry shortly');
    }
    // Safety net: a value Postgres cannot store (class 22, data exception) is the client's input.
    if (sqlState(error)?.startsWith('22')) {
      request.log.warn({ err: error }, 'data exception from input');
      return sendFailure(reply, request, 'VALIDATION_ERROR', 'a value in the request cannot be stored');
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      const code: ErrorCode =
        error.statusCode === 404
          ? 'NOT_FOUND'
          : error.statusCode === 413
            ? 'PAYLOAD_TOO_LARGE'
            : error.statusCode === 415
              ? 'UNSUPPORTED_MEDIA_TYPE'
              : 'VALIDATION_ERROR';
      return sendFailure(reply, request, code, error.message);
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendFailure(reply, request, 'INTERNAL_ERROR', 'internal error; quote the requestId when reporting it');
  });

  app.setNotFoundHandler((request, reply) =>
    sendFailure(reply, request, 'NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0]}`),
  );
});
