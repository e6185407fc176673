/**
 * The Redis Streams channel: one `XADD <stream> [MAXLEN ~ n] * payload <bytes> <header> <value>...`
 * per attempt; the entry id in the reply is the acknowledgement.
 *
 * Outcomes: an entry id → delivered · WRONGTYPE (the key is not a stream), NOAUTH / WRONGPASS /
 * NOPERM (not authorised) → discard · a denied address → discard · anything else (connection
 * refused or lost, LOADING, READONLY, OOM, timeout) → retry.
 *
 * One connection per destination (ConnectionPool). It does not reconnect by itself and queues
 * nothing while down: a broken connection is dropped and the next delivery opens a new one. A
 * connection whose XADD timed out is destroyed (Redis answers in order: the commands queued behind
 * the unanswered one, with their payloads, would wait on it forever).
 *
 * `rediss://` is TLS or nothing; credentials in a `redis://` URL need `allowInsecureCredentials`.
 */
import { isIP } from 'node:net';
import { Redis } from 'ioredis';
import type { AddressPolicy } from '../../core/address.ts';
import { SystemClock, type Clock } from '../../core/clock.ts';
import type { RedisTarget } from '../../core/destination.ts';
import type { Channel, DeliveryOutcome, DueEventOf } from '../channel.ts';
import { brokerAttempt } from '../broker/attempt.ts';
import { guardedAddress } from '../broker/guard.ts';
import { messageBody, messageHeaders } from '../broker/message.ts';
import { assertCredentialsTls, type InsecureCredentialsOptIn } from '../broker/config.ts';
import { ConnectionPool } from '../broker/pool.ts';
import { clearCredentials } from './spec.ts';

export interface RedisChannelOptions {
  policy: AddressPolicy;
  clock?: Clock;
  idleMs?: number;
  /** Bound on connecting, handshake included (each delivery is also bounded by its own timeout). */
  connectTimeoutMs?: number;
  connectionsMax?: number;
}

const PERMANENT_REPLIES = /^(WRONGTYPE|NOAUTH|WRONGPASS|NOPERM|ERR unknown command)/;

export class RedisChannel implements Channel<DueEventOf<'redis'>> {
  private readonly clock: Clock;
  private readonly pool: ConnectionPool<Redis>;

  constructor(private readonly opts: RedisChannelOptions) {
    this.clock = opts.clock ?? new SystemClock();
    this.pool = new ConnectionPool<Redis>({
      clock: this.clock,
      idleMs: opts.idleMs,
      connectionsMax: opts.connectionsMax,
      openTimeoutMs: opts.connectTimeoutMs,
      close: destroy,
    });
  }

  async deliver(event: DueEventOf<'redis'>, signal: AbortSignal): Promise<DeliveryOutcome> {
    const { target, poolKey: key } = event;
    return brokerAttempt(
      event,
      signal,
      this.clock,
      'redis',
      async (ended) => {
        await this.pool.with(
          key,
          JSON.stringify(target),
          (opening) => this.open(key, target, opening),
          async (redis) => {
            const args: (string | Buffer | number)[] = [target.stream];
            if (target.maxLen !== null) args.push('MAXLEN', '~', target.maxLen);
            args.push('*', 'payload', messageBody(event));
            for (const [k, v] of Object.entries(messageHeaders(event))) args.push(k, v);
            await redis.xadd(...(args as [string, ...string[]]));
          },
          ended,
        );
      },
      (err) => PERMANENT_REPLIES.test(String((err as Error)?.message ?? '')),
    );
  }

  /** The destination was deleted or changed: its connection closes. */
  forget(poolKey: string): void {
    this.pool.drop(poolKey);
  }

  private async open(key: string, target: RedisTarget, signal: AbortSignal): Promise<Redis> {
    assertCredentialsTls(clearCredentials(target), target as InsecureCredentialsOptIn);
    const url = new URL(target.url);
    const host = await guardedAddress(this.opts.policy, url.hostname);
    signal.throwIfAborted();
    const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0;
    const redis = new Redis({
      host,
      port: url.port === '' ? 6379 : Number(url.port),
      username: url.username === '' ? undefined : decodeURIComponent(url.username),
      password: url.password === '' ? undefined : decodeURIComponent(url.password),
      db: Number.isInteger(db) ? db : 0,
      // TLS or nothing; SNI carries a name, never an address (the certificate is checked against either).
      tls: url.protocol === 'rediss:' ? (isIP(hostOf(url)) ? {} : { servername: url.hostname }) : undefined,
      // Operators (and the tests) see Belfry's connections by name in CLIENT LIST.
      connectionName: 'belfry',
      lazyConnect: true,
      // XADDs that start in the same turn of the event loop share one write and one round trip.
      enableAutoPipelining: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: this.opts.connectTimeoutMs ?? 10_000,
    });
    // Errors reach the delivery that meets them; the event only keeps ioredis from printing them.
    redis.on('error', () => {});
    redis.on('end', () => this.pool.dropIf(key, redis));
    // Given up (too slow, dropped) or closed: the socket goes at once, whatever the handshake's state.
    signal.addEventListener('abort', () => destroy(redis), { once: true });
    try {
      await redis.connect();
    } catch (err) {
      destroy(redis);
      throw err;
    }
    return redis;
  }

  async close(): Promise<void> {
    await this.pool.closeAll();
  }
}

/** A URL's host without the brackets of an IPv6 literal. */
const hostOf = (url: URL) => url.hostname.replace(/^\[|\]$/g, '');

/**
 * Closes a connection at once. ioredis's disconnect() only half-closes (FIN) and waits for the
 * server's: a server that never answers would keep the socket, and every command queued on it.
 */
function destroy(redis: Redis): void {
  redis.disconnect();
  redis.stream?.destroy();
}
