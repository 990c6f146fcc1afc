import type { LookupAddress, LookupAllOptions } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { PrivateTargetError, privateRefusingLookup } from './private-addresses.ts';

/** A resolver that knows a few names (so the test needs no network). */
const names: Record<string, LookupAddress[]> = {
  'public.test': [
    { address: '93.184.216.34', family: 4 },
    { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
  ],
  'rebound.test': [
    { address: '93.184.216.34', family: 4 },
    { address: '127.0.0.1', family: 4 },
  ],
};
const resolve = (
  hostname: string,
  _options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => {
  const found = names[hostname];
  if (found) callback(null, found);
  else callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
};

/** What the lookup answers, called as Node calls it: `{ all: true }` when it connects with autoSelectFamily. */
function ask(hostname: string, all: boolean) {
  const lookup = privateRefusingLookup('SOME_SETTING', resolve);
  return new Promise<{ error: Error | null; address: unknown; family: unknown }>((done) => {
    lookup(hostname, { all }, ((error: Error | null, address: unknown, family: unknown) =>
      done({ error, address, family })) as never);
  });
}

describe('privateRefusingLookup', () => {
  it('answers a public name with every address when Node asks for all, and with the first otherwise', async () => {
    expect(await ask('public.test', true)).toMatchObject({ error: null, address: names['public.test'] });
    expect(await ask('public.test', false)).toMatchObject({ error: null, address: '93.184.216.34', family: 4 });
  });

  it('refuses a name when any of its addresses is private, naming it and the setting that would allow it', async () => {
    for (const all of [true, false]) {
      const { error } = await ask('rebound.test', all);
      expect(error).toBeInstanceOf(PrivateTargetError);
      expect(error?.message).toBe(
        'rebound.test resolves to a private, loopback or reserved address: refused (SOME_SETTING)',
      );
    }
  });

  it("passes the resolver's own failure on unchanged", async () => {
    const { error } = await ask('nowhere.test', true);
    expect(error).not.toBeInstanceOf(PrivateTargetError);
    expect((error as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
  });
});
