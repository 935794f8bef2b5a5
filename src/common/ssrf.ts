import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';

/**
 * The SSRF guard of every outbound request to a URL someone else chose (webhook deliveries, client
 * metadata documents). Addresses never reached unless allowed: loopback, private, CGNAT,
 * link-local (metadata), unique-local, multicast, reserved.
 */
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

/**
 * Which non-public targets a capability allows: loopback (a service on this machine), or every
 * private address; and, for its refusals, what would allow a refused one (a setting's name).
 */
export type TargetAllowance = {
  allowLoopbackTargets: boolean;
  allowPrivateTargets: boolean;
  allowedBy?: { loopback?: string; private?: string };
};

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

export function isLoopbackAddress(address: string): boolean {
  return listed(loopback, address) ?? false;
}

/** Whether a request may connect to this address under the allowance. */
export function isRefusedAddress(address: string, allowance: TargetAllowance): boolean {
  if (allowance.allowPrivateTargets) return false;
  return isForbiddenAddress(address) && !(allowance.allowLoopbackTargets && isLoopbackAddress(address));
}

/** Not an IP address at all is forbidden too: only resolved addresses are ever connected to. */
export function isForbiddenAddress(address: string): boolean {
  return listed(forbidden, address) ?? true;
}

/** Whether an IP address (IPv4-mapped and embedded forms judged by their IPv4) is in a list; undefined for a non-IP. */
function listed(list: BlockList, address: string): boolean | undefined {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return list.check(bare, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(bare);
    return v4 !== undefined ? list.check(v4, 'ipv4') : list.check(bare, 'ipv6');
  }
  return undefined;
}

export class ForbiddenTargetError extends Error {
  readonly code = 'TARGET_FORBIDDEN';
  constructor(host: string, address: string, allowedBy: TargetAllowance['allowedBy'] = {}) {
    const loopback = isLoopbackAddress(address);
    const kind = loopback ? 'a loopback address' : 'a private, link-local or otherwise non-public address';
    const remedy = loopback ? allowedBy.loopback : allowedBy.private;
    super(`refused by the SSRF guard: ${host} is ${address}, ${kind}${remedy ? ` (${remedy})` : ''}`);
  }
}

/** A DNS lookup that refuses the name if any address it resolves to is forbidden (no rebinding between answers). */
function guardedLookup(resolve: LookupFunction, allowance: TargetAllowance): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = addresses as unknown as LookupAddress[];
      const bad = list.find((a) => isRefusedAddress(a.address, allowance));
      if (bad) return callback(new ForbiddenTargetError(hostname, bad.address, allowance.allowedBy), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      return callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

/**
 * Why requests to a URL would be refused, found the way the guard finds it (an IP literal, or every
 * address its name resolves to); undefined when they would be sent. For telling an operator at
 * once, when the URL is set (a webhook's), rather than at the first request.
 */
export async function refusalOf(url: string, allowance: TargetAllowance, resolve: LookupFunction = dnsLookup as LookupFunction): Promise<string | undefined> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) return isRefusedAddress(host, allowance) ? new ForbiddenTargetError(host, host, allowance.allowedBy).message : undefined;
  return new Promise((settle) => {
    guardedLookup(resolve, allowance)(host, { all: true }, (error) => {
      if (error instanceof ForbiddenTargetError) settle(error.message);
      else if (error) settle(`${host} does not resolve (${(error as NodeJS.ErrnoException).code ?? error.message}); requests fail until it does`);
      else settle(undefined);
    });
  });
}

/**
 * An undici dispatcher that connects only to addresses the allowance permits (public ones, and
 * loopback or private ones when allowed). The host is checked before connecting (IP literals, and every DNS
 * answer), and the address actually connected is checked again before a byte is sent. Redirects
 * are never followed by undici's `request`.
 */
export function createGuardedAgent(options: TargetAllowance & { lookup?: LookupFunction; connectTimeoutMs?: number }): Agent {
  const connectTimeout = options.connectTimeoutMs ?? 10_000;
  if (options.allowPrivateTargets) return new Agent({ connect: { timeout: connectTimeout }, keepAliveTimeout: 10_000 });
  const connector = buildConnector({ timeout: connectTimeout, lookup: guardedLookup(options.lookup ?? (dnsLookup as LookupFunction), options) });
  return new Agent({
    keepAliveTimeout: 10_000,
    connect(connectOptions, callback) {
      const host = connectOptions.hostname.replace(/^\[|\]$/g, '');
      if (isIP(host) && isRefusedAddress(host, options)) return callback(new ForbiddenTargetError(host, host, options.allowedBy), null);
      connector(connectOptions, (error, socket) => {
        if (error) return callback(error, null);
        const remote = socket!.remoteAddress;
        if (!remote || isRefusedAddress(remote, options)) {
          socket!.destroy();
          return callback(new ForbiddenTargetError(host, remote ?? 'unknown', options.allowedBy), null);
        }
        callback(null, socket!);
      });
    },
  });
}
