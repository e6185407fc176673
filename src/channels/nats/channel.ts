/**
 * The NATS JetStream channel: one JetStream publish per attempt; the stream's publish ack (it
 * stored the message) is the acknowledgement.
 *
 * Outcomes: a PubAck → delivered · no stream listens on the subject (503 no responders), a
 * permissions or authorisation violation, a message larger than the server's max_payload →
 * discard · a denied address → discard · anything else (connection refused or lost, a JetStream
 * error, no ack in time) → retry.
 *
 * One connection per destination (ConnectionPool), through Belfry's own small client
 * (client.ts), which owns its socket: the servers are tried in order, each at the address that
 * passed the guard (cluster gossip is ignored: a server cannot point Belfry at other hosts). It
 * does not reconnect by itself: a broken connection is dropped and the next delivery opens a new
 * one. A connection whose publish got no ack in time is destroyed, with what it still buffered.
 *
 * `tls://` servers are spoken to over TLS only (a server that does not offer TLS is refused
 * before a byte is sent); credentials (a user and password in a URL, a lone user name, which NATS
 * reads as a token, or `token`) over `nats://` need `allowInsecureCredentials`.
 */
import type tls from 'node:tls';
import type { AddressPolicy } from '../../core/address.ts';
import { SystemClock, type Clock } from '../../core/clock.ts';
import type { NatsTarget } from '../../core/destination.ts';
import type { Channel, DeliveryOutcome, DueEventOf } from '../channel.ts';
import { brokerAttempt } from '../broker/attempt.ts';
import { guardedAddress } from '../broker/guard.ts';
import { messageBody, messageHeaders } from '../broker/message.ts';
import { assertCredentialsTls, type InsecureCredentialsOptIn } from '../broker/config.ts';
import { ConnectionPool } from '../broker/pool.ts';
import { NatsError, NatsLink } from './client.ts';
import { clearCredentials, wantsTls } from './spec.ts';

export interface NatsChannelOptions {
  policy: AddressPolicy;
  clock?: Clock;
  idleMs?: number;
  /** Bound on connecting, handshake included, over all the servers. */
  connectTimeoutMs?: number;
  connectionsMax?: number;
  /** Tests: extra TLS options (a CA to trust). */
  tlsOptions?: tls.ConnectionOptions;
}

const PERMANENT_CODES = new Set([
  'NO_RESPONDERS',
  'PERMISSIONS_VIOLATION',
  'AUTHORIZATION_VIOLATION',
  'MAX_PAYLOAD',
  'NO_HEADERS',
]);
const NATS_PORT_DEFAULT = 4222;

/** How a target logs in: a user and password, or a token (`token`, or a lone user name in a URL). */
function credentialsOf(target: NatsTarget): { user?: string; pass?: string; token?: string } {
  for (const server of target.servers) {
    const url = new URL(server);
    if (url.username === '') continue;
    if (url.password === '') return { token: target.token ?? decodeURIComponent(url.username) };
    return {
      user: decodeURIComponent(url.username),
      pass: decodeURIComponent(url.password),
      ...(target.token !== null ? { token: target.token } : {}),
    };
  }
  return target.token !== null ? { token: target.token } : {};
}

export class NatsChannel implements Channel<DueEventOf<'nats'>> {
  private readonly clock: Clock;
  private readonly pool: ConnectionPool<NatsLink>;

  constructor(private readonly opts: NatsChannelOptions) {
    this.clock = opts.clock ?? new SystemClock();
    this.pool = new ConnectionPool<NatsLink>({
      clock: this.clock,
      idleMs: opts.idleMs,
      connectionsMax: opts.connectionsMax,
      openTimeoutMs: opts.connectTimeoutMs,
      close: (l) => l.close(),
    });
  }

  async deliver(event: DueEventOf<'nats'>, signal: AbortSignal): Promise<DeliveryOutcome> {
    const { target, poolKey: key } = event;
    return brokerAttempt(
      event,
      signal,
      this.clock,
      'nats',
      async (ended) => {
        await this.pool.with(
          key,
          JSON.stringify(target),
          (opening) => this.open(key, target, opening),
          (link) => link.publish(target.subject, messageHeaders(event), messageBody(event)),
          ended,
        );
      },
      (err) => err instanceof NatsError && PERMANENT_CODES.has(err.code),
    );
  }

  forget(poolKey: string): void {
    this.pool.drop(poolKey);
  }

  /** Connects to the first server that answers, in the order the destination lists them. */
  private async open(key: string, target: NatsTarget, signal: AbortSignal): Promise<NatsLink> {
    assertCredentialsTls(clearCredentials(target), target as InsecureCredentialsOptIn);
    const credentials = credentialsOf(target);
    const secure = wantsTls(target);
    let lastError: unknown = new Error('no server');
    for (const server of target.servers) {
      signal.throwIfAborted();
      const url = new URL(server);
      try {
        const address = await guardedAddress(this.opts.policy, url.hostname);
        const link = await NatsLink.connect({
          server: {
            address,
            port: url.port === '' ? NATS_PORT_DEFAULT : Number(url.port),
            hostname: url.hostname.replace(/^\[|\]$/g, ''),
          },
          tls: secure,
          ...credentials,
          name: 'belfry',
          signal,
          tlsOptions: this.opts.tlsOptions,
        });
        link.onClose(() => this.pool.dropIf(key, link));
        return link;
      } catch (err) {
        // A refusal for good (a denied address, bad credentials) is the answer; else try the next.
        if (signal.aborted || (err instanceof NatsError && PERMANENT_CODES.has(err.code))) throw err;
        lastError = err;
      }
    }
    throw lastError;
  }

  async close(): Promise<void> {
    await this.pool.closeAll();
  }
}
