import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { isPrivateAddress, PrivateTargetError, privateRefusingLookup } from '../shared/private-addresses.ts';

/** A feedback file larger than this is not read (the spec's examples are a few hundred bytes). */
export const MAX_FILE_BYTES = 64 * 1024;

export type FetchMode = 'off' | 'public' | 'any';

export type FileAnswer =
  | { ok: true; bytes: Buffer }
  | { ok: false; status: 'skipped' | 'unsupported' | 'unavailable' | 'invalid'; detail: string; retry: boolean };

/** Names resolving to a private address are refused in `public` mode, at connect time. */
const publicLookup = privateRefusingLookup('ERC8004_FEEDBACK_FETCH=public');

function decodeDataUri(uri: string): FileAnswer {
  const match = /^data:([^,]*?)(;base64)?,(.*)$/s.exec(uri);
  if (!match) return { ok: false, status: 'invalid', detail: 'a malformed data: URI', retry: false };
  const body = match[3] as string;
  let bytes: Buffer;
  try {
    // Percent-encoding that does not decode (`%` alone, or not UTF-8) is the file's fault: it is
    // invalid for good, not a failure of the run that read it.
    bytes = match[2] ? Buffer.from(body, 'base64') : Buffer.from(decodeURIComponent(body), 'utf8');
  } catch {
    return { ok: false, status: 'invalid', detail: 'a data: URI whose percent-encoding does not decode', retry: false };
  }
  if (bytes.length > MAX_FILE_BYTES)
    return { ok: false, status: 'invalid', detail: `larger than ${MAX_FILE_BYTES} bytes`, retry: false };
  return { ok: true, bytes };
}

/**
 * Reads a feedback file: a data: URI in place, http(s) per `mode` (`public` refuses hosts on
 * private addresses), anything else (ipfs:, ar:) is not supported. At most MAX_FILE_BYTES, within
 * `timeoutMs`, no redirects.
 */
export async function fetchFile(uri: string, mode: FetchMode, timeoutMs: number): Promise<FileAnswer> {
  if (uri.startsWith('data:')) return decodeDataUri(uri);
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return { ok: false, status: 'invalid', detail: 'not a URI', retry: false };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return { ok: false, status: 'unsupported', detail: `${url.protocol} URIs are not read`, retry: false };
  }
  if (mode === 'off') {
    return { ok: false, status: 'skipped', detail: 'ERC8004_FEEDBACK_FETCH=off', retry: false };
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (mode === 'public' && isIP(host) && isPrivateAddress(host)) {
    return { ok: false, status: 'skipped', detail: 'a private address', retry: false };
  }
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((settle) => {
    let deadline: NodeJS.Timeout | undefined;
    const resolve = (answer: FileAnswer) => {
      clearTimeout(deadline);
      settle(answer);
    };
    const req = request(
      url,
      {
        method: 'GET',
        ...(mode === 'public' && { lookup: publicLookup }),
        headers: { accept: 'application/json' },
      },
      (res) => {
        if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) >= 300) {
          res.resume();
          const retry = (res.statusCode ?? 0) >= 500;
          resolve({ ok: false, status: 'unavailable', detail: `HTTP ${res.statusCode}`, retry });
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_FILE_BYTES) {
            res.destroy();
            resolve({ ok: false, status: 'invalid', detail: `larger than ${MAX_FILE_BYTES} bytes`, retry: false });
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => resolve({ ok: true, bytes: Buffer.concat(chunks) }));
        res.on('error', (error) => resolve({ ok: false, status: 'unavailable', detail: error.message, retry: true }));
        // Destroyed mid-body (the deadline): no 'end', and the error may come only to the request.
        res.on('aborted', () =>
          resolve({ ok: false, status: 'unavailable', detail: `not read within ${timeoutMs} ms`, retry: true }),
        );
      },
    );
    // One deadline for the whole read, a silent host's included (a socket timeout counts only
    // silence: a host that sends a byte now and then would hold the run far longer).
    deadline = setTimeout(() => req.destroy(new Error(`not read within ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (error) => {
      const refused = error instanceof PrivateTargetError;
      resolve({ ok: false, status: refused ? 'skipped' : 'unavailable', detail: error.message, retry: !refused });
    });
    req.end();
  });
}
