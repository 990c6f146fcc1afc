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
    // The attempt ends here whatever the request does next: a request already torn down (an
    // upgrade, below) emits nothing more when destroyed again.
    timer = setTimeout(() => {
      request.destroy();
      finish(null, `no answer within ${options.timeoutMs} ms`);
    }, options.timeoutMs);
    // A 101 is a switch of protocols, not an answer: Node hands it to 'upgrade' listeners and,
    // without one, drops the socket with no other event. The attempt fails with its status.
    request.on('upgrade', (_response, socket) => {
      socket.destroy();
      finish(101, 'the receiver switched protocols (101): not an answer to a webhook');
    });
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
      const location = redirectTarget(url, response.headers.location);
      let read = 0;
      let capped = false;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_RESPONSE_BYTES) {
          capped = true;
          response.destroy();
        }
      });
      const done = () => {
        // The connection ended inside the answer (a body shorter than its length, a chunked one
        // without its last chunk): no whole answer came, as when none comes in time. Only the
        // answer this side stops reading (over MAX_RESPONSE_BYTES) ends early and still counts.
        if (!response.complete && !capped) {
          finish(null, `the answer (${status}) was cut off before its end`);
          return;
        }
        finish(
          status,
          status !== null && status >= 300 && status < 400
            ? `redirects are not followed${location ? ` (to ${location})` : ''}`
            : status !== null && (status < 200 || status >= 300)
              ? `the receiver answered ${status}`
              : null,
        );
      };
      response.on('end', done);
      response.on('close', done);
      response.on('error', done);
    });
    request.end(payload);
  });
}

/**
 * Where a redirect points, as much of it as the attempt log keeps: its origin. Its path and query
 * may carry a token (the endpoint's own URL moved to https, say), and the log's last error goes
 * into the `webhook.disabled` event, which every key that reads events sees.
 */
function redirectTarget(url: string, location: string | undefined): string | null {
  if (!location) return null;
  try {
    const origin = new URL(location, url).origin;
    return origin === 'null' ? null : origin;
  } catch {
    return null;
  }
}
