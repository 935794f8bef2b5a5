import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';

/** Addresses a webhook must never reach: loopback, private, CGNAT, link-local (metadata), unique-local, multicast, reserved. */
const forbidden = new BlockList();
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
  forbidden.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  forbidden.addSubnet(network, prefix, 'ipv6');
}

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible or NAT64 IPv6 address. */
function embeddedIpv4(address: string): string | undefined {
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const match = /^(?:::ffff:|::|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!match) return undefined;
  const high = parseInt(match[1]!, 16);
  const low = parseInt(match[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

export function isForbiddenAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return forbidden.check(bare, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(bare);
    return v4 !== undefined ? forbidden.check(v4, 'ipv4') : forbidden.check(bare, 'ipv6');
  }
  return true;
}

export class ForbiddenTargetError extends Error {
  readonly code = 'WEBHOOK_TARGET_FORBIDDEN';
  constructor(host: string, address: string) {
    super(`refused by the SSRF guard: ${host} is ${address}, a loopback, private, link-local or otherwise non-public address`);
  }
}

/** A DNS lookup that refuses the name if any address it resolves to is forbidden (no rebinding between answers). */
function guardedLookup(resolve: LookupFunction): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as unknown as LookupAddress[];
      const bad = list.find((a) => isForbiddenAddress(a.address));
      if (bad) return callback(new ForbiddenTargetError(hostname, bad.address), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      return callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

/**
 * An undici dispatcher that connects only to public addresses. The host is checked before
 * connecting (IP literals, and every DNS answer), and the address actually connected is checked
 * again before a byte is sent. Redirects are never followed by undici's `request`.
 */
export function createWebhookAgent(options: { allowPrivateTargets: boolean; lookup?: LookupFunction; connectTimeoutMs?: number }): Agent {
  const connectTimeout = options.connectTimeoutMs ?? 10_000;
  if (options.allowPrivateTargets) return new Agent({ connect: { timeout: connectTimeout }, keepAliveTimeout: 10_000 });
  const connector = buildConnector({ timeout: connectTimeout, lookup: guardedLookup(options.lookup ?? (dnsLookup as LookupFunction)) });
  return new Agent({
    keepAliveTimeout: 10_000,
    connect(connectOptions, callback) {
      const host = connectOptions.hostname.replace(/^\[|\]$/g, '');
      if (isIP(host) && isForbiddenAddress(host)) return callback(new ForbiddenTargetError(host, host), null);
      connector(connectOptions, (error, socket) => {
        if (error) return callback(error, null);
        const remote = socket!.remoteAddress;
        if (!remote || isForbiddenAddress(remote)) {
          socket!.destroy();
          return callback(new ForbiddenTargetError(host, remote ?? 'unknown'), null);
        }
        callback(null, socket!);
      });
    },
  });
}
