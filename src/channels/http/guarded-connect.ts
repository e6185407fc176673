/**
 * The socket side of the private-address guard (src/core/address.ts): an undici `connect`
 * function that refuses to open or keep a connection to a denied address.
 *
 * Three checks, each on what is actually used, never on what the URL looked like:
 *   1. a URL host that is an IP literal is judged before any socket opens;
 *   2. a host name is resolved by our own `lookup`, which drops denied addresses from the
 *      answer (all of them denied → the connection fails before a packet leaves);
 *   3. once connected, the socket's peer address is judged again, so a resolver that answers
 *      differently between check and use (DNS rebinding) or anything else that redirects the
 *      socket still cannot reach a denied address. A refused socket is destroyed unused.
 * Keep-alive sockets are reused only for the origin that opened them, so every request goes
 * over a socket that passed these checks.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { buildConnector } from 'undici';
import { normalizeHost, parseIp, type AddressPolicy } from '../../core/address.ts';

/** The error code a refused connection fails with; the channel maps it to a discard. */
export const ADDRESS_DENIED_CODE = 'EBELFRY_ADDRESS_DENIED';

export class AddressDeniedError extends Error {
  readonly code = ADDRESS_DENIED_CODE;
  constructor(reason: string) {
    super(reason);
    this.name = 'AddressDeniedError';
  }
}

/** Resolves a host name to all its addresses (dns.lookup with `all: true`); injectable for tests. */
export type Resolver = (
  hostname: string,
  options: LookupOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemResolver: Resolver = (hostname, options, callback) =>
  dnsLookup(hostname, { ...options, all: true }, callback);

/** A net/tls `lookup` that answers only with addresses the policy allows for `hostname`. */
export function guardedLookup(policy: AddressPolicy, resolve: Resolver = systemResolver): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, options, (err, addresses) => {
      if (err) return callback(err, '');
      const allowed = addresses.filter((a) => policy.checkAddress(a.address, hostname) === null);
      if (allowed.length === 0) {
        const first = addresses[0];
        const reason = first ? policy.checkAddress(first.address, hostname)! : `${hostname} resolved to no address`;
        return callback(new AddressDeniedError(reason), '');
      }
      if (options.all) return callback(null, allowed);
      return callback(null, allowed[0].address, allowed[0].family);
    });
  };
}

export interface GuardedConnectOptions {
  policy: AddressPolicy;
  /** Connect timeout in ms (undici's default: 10 s). */
  timeoutMs?: number;
  resolve?: Resolver;
}

/** An undici `connect` function that applies the policy to every socket it opens. */
export function guardedConnect(opts: GuardedConnectOptions): buildConnector.connector {
  // allowH2: false keeps the TLS handshake offering http/1.1 alone (undici 8 offers h2 by default).
  const connector = buildConnector({
    allowH2: false,
    timeout: opts.timeoutMs,
    lookup: guardedLookup(opts.policy, opts.resolve),
  });
  return (options, callback) => {
    const host = normalizeHost(options.hostname);
    if (parseIp(host)) {
      const why = opts.policy.checkAddress(host, host);
      if (why) return callback(new AddressDeniedError(why), null);
    }
    connector(options, (...args) => {
      const [err, socket] = args;
      if (err) return callback(err, null);
      const remote = socket!.remoteAddress;
      const why =
        remote === undefined ? 'the connected socket has no peer address' : opts.policy.checkAddress(remote, host);
      if (why) {
        socket!.destroy();
        return callback(new AddressDeniedError(why), null);
      }
      callback(null, socket!);
    });
  };
}
