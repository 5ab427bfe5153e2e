/**
 * Where the service may connect when a URL comes from a user (a webhook receiver): the address
 * classes, judged on the addresses a host name actually resolves to, and a `lookup` for
 * `http.request` that refuses a connection to any other, so the address checked is the address
 * connected to (a name that resolved to a public address when the URL was stored and to
 * 169.254.169.254 at delivery time is refused then). Ranges come from ipaddr.js (`range()`),
 * not from a list kept here.
 */
import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/** Cloud instance-metadata endpoints (AWS, GCP, Azure, Alibaba, AWS IPv6): credentials for the asking. */
export const METADATA_HOSTS = new Set(['169.254.169.254', 'metadata.google.internal', 'metadata', 'instance-data', 'instance-data.ec2.internal', '100.100.100.200', 'fd00:ec2::254']);

/** Which address classes a connection may reach. Link-local, metadata, multicast, reserved and unspecified addresses never. */
export interface AddressPolicy {
  /** Public unicast addresses. */
  public: boolean;
  /** Private (RFC 1918, IPv6 unique-local, shared CGNAT space) and loopback addresses: on-premise receivers, tests. */
  private: boolean;
}

const PRIVATE_RANGES = new Set(['private', 'loopback', 'uniqueLocal', 'carrierGradeNat']);

/** Why a connection to `address` (an IP address) is refused, or undefined when it is allowed. Never names the address. */
export function addressProblem(address: string, policy: AddressPolicy): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // `process` reads an IPv4-mapped IPv6 address (::ffff:10.0.0.1) as the IPv4 address it is.
    parsed = ipaddr.process(address);
  } catch {
    return 'is not an IP address';
  }
  if (METADATA_HOSTS.has(parsed.toString())) return 'is a cloud metadata address';
  const range = parsed.range();
  if (range === 'unicast') return policy.public ? undefined : 'is a public address (plain http is allowed to private and loopback addresses only)';
  if (PRIVATE_RANGES.has(range)) {
    return policy.private ? undefined : `is a ${range === 'loopback' ? 'loopback' : 'private'} address`;
  }
  return range === 'linkLocal' ? 'is a link-local address' : `is not a routable unicast address (${range})`;
}

/** A URL's host without IPv6 brackets or a trailing dot, lower case (WHATWG URL has already normalized IPv4 forms such as `0xa9fea9fe`). */
export function urlHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
}

/**
 * Why `host` (a name or an IP address) may not be connected to: every address it resolves to
 * must pass (one refused address refuses the name: a resolver may answer either). Undefined
 * when it may.
 */
export async function hostProblem(host: string, policy: AddressPolicy): Promise<string | undefined> {
  if (METADATA_HOSTS.has(host)) return 'is a cloud metadata address';
  if (net.isIP(host)) return addressProblem(host, policy);
  let addresses: dns.LookupAddress[];
  try {
    addresses = await dns.promises.lookup(host, { all: true });
  } catch {
    return 'does not resolve (unknown host name)';
  }
  for (const { address } of addresses) {
    const problem = addressProblem(address, policy);
    if (problem) return `resolves to an address that ${problem}`;
  }
  return undefined;
}

/** The error a refused connection fails with (`code` EADDRREFUSED). */
export class RefusedAddressError extends Error {
  readonly code = 'EADDRREFUSED';
  constructor(host: string, problem: string) {
    super(`${host} ${problem}`);
    this.name = 'RefusedAddressError';
  }
}

/**
 * A `lookup` for `http.request`/`https.request` (and `net.connect`): resolves as Node does, then
 * refuses the connection unless every address passes `policy`. Node connects to an address this
 * returned, so nothing can change between the check and the connection. (A URL naming an IP
 * address is not looked up: check it with `addressProblem` before connecting.)
 */
export function checkedLookup(policy: AddressPolicy): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      for (const { address } of addresses) {
        const problem = addressProblem(address, policy);
        if (problem) return callback(new RefusedAddressError(hostname, `resolves to an address that ${problem}`), '', 0);
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
