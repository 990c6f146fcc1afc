import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { PrivateTargetError, privateRefusingLookup } from '../shared/private-addresses.ts';
import { literalTargetProblem } from './webhooks.model.ts';

export interface SendOptions {
  /** The whole attempt (connection, request, answer) must end within this long. */
  timeoutMs: number;
  /** WEBHOOK_ALLOW_PRIVATE_TARGETS: private, loopback and link-local targets are allowed. */
  allowPrivateTargets: boolean;
}

export interface SendResult {
  /** The receiver's status; null when none came (refused target, connection error, timeout). */
  statusCode: number | null;
  durationMs: number;
  error: string | null;
}

/** What is read of a receiver's answer: enough to free the connection, never its whole body. */
const MAX_RESPONSE_BYTES = 64 * 1024;

const guardedLookup = privateRefusingLookup('WEBHOOK_ALLOW_PRIVATE_TARGETS');
/** The resolver's answers that a name has no address (or none it could get). */
const NAME_NOT_RESOLVED = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL', 'ENODATA']);

/**
 * POSTs one webhook message. Never throws: the outcome (status, time, error) is the result.
 * Redirects are not followed (a 3xx is the receiver's answer), nothing is retried here, and a
 * receiver that does not answer within the timeout is cut off.
 */
export function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: SendOptions,
): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    // Armed once the request is made; a target refused before then finishes without one.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (statusCode: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ statusCode, durationMs: elapsed(), error });
    };
    const target = new URL(url);
    if (!options.allowPrivateTargets) {
      const problem = literalTargetProblem(url);
      if (problem) {
        finish(null, `the URL ${problem}: refused (WEBHOOK_ALLOW_PRIVATE_TARGETS)`);
        return;
      }
    }
    const client = target.protocol === 'https:' ? https : http;
    const payload = Buffer.from(body, 'utf8');
    const guarded = !options.allowPrivateTargets && !isIP(target.hostname.replace(/^\[|\]$/g, ''));
    const request = client.request(target, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(payload.length) },
      // A fresh connection per attempt: no socket outlives the check made when it was opened.
      agent: false,
      ...(guarded && { lookup: guardedLookup }),
    });
    timer = setTimeout(() => {
      request.destroy(new Error(`no answer within ${options.timeoutMs} ms`));
    }, options.timeoutMs);
    request.on('error', (error: NodeJS.ErrnoException) => {
      // A name refused as private and one that does not resolve read the same: the attempt log
      // must not tell whoever set the URL which internal names exist.
      const unresolved = error instanceof PrivateTargetError || NAME_NOT_RESOLVED.has(error.code ?? '');
      finish(
        null,
        guarded && unresolved
          ? `${target.hostname} does not resolve to a public address (unknown, or private): refused (WEBHOOK_ALLOW_PRIVATE_TARGETS)`
          : error.message,
      );
    });
    request.on('response', (response) => {
      const status = response.statusCode ?? null;
      const location = response.headers.location;
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_RESPONSE_BYTES) response.destroy();
      });
      const done = () =>
        finish(
          status,
          status !== null && status >= 300 && status < 400
            ? `redirects are not followed${location ? ` (Location: ${String(location).slice(0, 200)})` : ''}`
            : status !== null && (status < 200 || status >= 300)
              ? `the receiver answered ${status}`
              : null,
        );
      response.on('end', done);
      response.on('close', done);
      response.on('error', done);
    });
    request.end(payload);
  });
}
