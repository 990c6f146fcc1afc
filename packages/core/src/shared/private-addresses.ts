import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

// Addresses an outbound request on someone else's behalf (a webhook, a feedback file) may not
// reach unless allowed: this host, private networks, link-local (cloud metadata at
// 169.254.169.254), shared, reserved, documentation, benchmarking and multicast ranges.
const privateRanges = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  privateRanges.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  // The unspecified address, loopback and the deprecated IPv4-compatible ones (`::a.b.c.d`).
  ['::', 96],
  // Teredo tunnels: an IPv4 address behind it, obfuscated.
  ['2001::', 32],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  // Benchmarking, and documentation: both of its ranges (RFC 3849 and RFC 9637).
  ['2001:2::', 48],
  ['2001:db8::', 32],
  ['3fff::', 20],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  privateRanges.addSubnet(network, prefix, 'ipv6');
}

/**
 * The IPv4 address an IPv6 one carries (IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated
 * `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`), if any.
 */
function embeddedIpv4(address: string): string | null {
  const lower = address.toLowerCase();
  const mapped = /^::ffff:(?:0:)?(\d+\.\d+\.\d+\.\d+)$/.exec(lower) ?? /^64:ff9b::(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (mapped?.[1]) return mapped[1];
  const words = expandIpv6(lower);
  if (!words) return null;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const prefix = words.slice(0, 6).join(':');
  if (prefix === '0:0:0:0:0:65535' || prefix === '0:0:0:0:65535:0') return v4(words[6] as number, words[7] as number);
  if (words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0)) {
    return v4(words[6] as number, words[7] as number);
  }
  if (words[0] === 0x2002) return v4(words[1] as number, words[2] as number);
  return null;
}

/** The eight 16-bit words of an IPv6 address (without an embedded dotted quad), or null. */
function expandIpv6(address: string): number[] | null {
  if (address.includes('.')) return null;
  const [head, tail, ...rest] = address.split('::');
  if (rest.length) return null;
  const left = head ? head.split(':') : [];
  const right = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const missing = 8 - left.length - right.length;
  if (tail === undefined ? left.length !== 8 : missing < 0) return null;
  const words = [...left, ...Array(tail === undefined ? 0 : missing).fill('0'), ...right].map((w) =>
    Number.parseInt(w, 16),
  );
  return words.length === 8 && words.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffff) ? words : null;
}

/** Whether an IP address (v4 or v6) is one outbound requests may not reach by default; anything not an address is. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return privateRanges.check(bare, 'ipv4');
  if (family !== 6) return true; // not an address at all: refuse
  const v4 = embeddedIpv4(bare);
  if (v4) return privateRanges.check(v4, 'ipv4');
  return privateRanges.check(bare, 'ipv6');
}

/** A connection refused because its name resolves to an address `isPrivateAddress` refuses. */
export class PrivateTargetError extends Error {
  readonly code = 'ETARGETREFUSED';
}

type Resolve = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * A `lookup` for http(s) requests that refuses a name when any address it resolves to is private
 * (`setting` names what would allow it). Node connects to an address this returns, so the check
 * holds for the connection itself: a name that resolves to a public address when it is saved and
 * to 127.0.0.1 when it is fetched (DNS rebinding) is refused then. It answers in the shape Node
 * asks for: a list when `all` is set (as Node's connect does with `autoSelectFamily`), else one.
 */
export function privateRefusingLookup(setting: string, resolve: Resolve = dnsLookup as Resolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const refused = addresses.find((a) => isPrivateAddress(a.address));
      const first = addresses[0];
      if (refused || !first) {
        // Not which address: that would tell whoever chose the name what an internal one resolves to.
        const why = refused
          ? `${hostname} resolves to a private, loopback or reserved address`
          : `${hostname} resolves to no address`;
        return callback(new PrivateTargetError(`${why}: refused (${setting})`), '', 0);
      }
      if ((options as { all?: boolean }).all) {
        (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      } else callback(null, first.address, first.family);
    });
  };
}
