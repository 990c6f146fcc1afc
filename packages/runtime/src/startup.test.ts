import type { LookupAddress } from 'node:dns';
import net from 'node:net';
import { ConfigError } from '@vouch/config';
import { describe, expect, it } from 'vitest';
import { startupFailureLine } from './startup.ts';

/** A port nothing listens on (taken from the system, then given back). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * What connecting to a name with an IPv6 and an IPv4 address (`localhost` in most containers)
 * fails with when neither answers: Node tries both and throws an AggregateError without a message.
 */
async function refusedOnBothFamilies(port: number): Promise<Error> {
  return new Promise((resolve) => {
    const socket = net.connect({
      host: 'localhost',
      port,
      autoSelectFamily: true,
      lookup: (_host, _options, callback) =>
        (callback as (error: null, addresses: LookupAddress[]) => void)(null, [
          { address: '::1', family: 6 },
          { address: '127.0.0.1', family: 4 },
        ]),
    });
    socket.on('error', resolve);
  });
}

describe('the line a failed start ends with', () => {
  it('says why a connection failed on every address, not only AggregateError', async () => {
    const port = await closedPort();
    const error = await refusedOnBothFamilies(port);
    expect(error).toBeInstanceOf(AggregateError);
    expect(startupFailureLine(error, 'vouch-api')).toMatch(
      new RegExp(
        `^vouch-api: could not start: connect E[A-Z]+ ::1:${port}; connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\n$`,
      ),
    );
  });

  it('names the variable of a bad setting, and gives one line of anything else', () => {
    expect(startupFailureLine(new ConfigError('invalid configuration: PORT: too big'), 'vouch-api')).toBe(
      'vouch-api: invalid configuration: PORT: too big\n',
    );
    expect(startupFailureLine(new Error('first\nsecond'), 'db:migrate', 'failed')).toBe('db:migrate: failed: first\n');
  });
});
