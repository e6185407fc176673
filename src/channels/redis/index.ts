/**
 * The Redis Streams channel: one `XADD <stream> [MAXLEN ~ n] * payload <bytes> <header> <value>...`
 * per attempt; the entry id in the reply is the acknowledgement.
 *
 * Outcomes: an entry id → delivered · WRONGTYPE (the key is not a stream), NOAUTH / WRONGPASS /
 * NOPERM (not authorised) → discard · a denied address → discard · anything else (connection
 * refused or lost, LOADING, READONLY, OOM, timeout) → retry.
 *
 * One connection per destination (ConnectionPool). It does not reconnect by itself and queues
 * nothing while down: a broken connection is dropped and the next delivery opens a new one.
 */
import { Redis } from 'ioredis';
import type { AddressPolicy } from '../../core/address.ts';
import { SystemClock, type Clock } from '../../core/clock.ts';
import type { RedisTarget } from '../../core/destination.ts';
import type { Channel, DeliveryOutcome, DueEvent } from '../channel.ts';
import { brokerAttempt } from '../broker/attempt.ts';
import { guardedAddress } from '../broker/guard.ts';
import { messageBody, messageHeaders } from '../broker/message.ts';
import { checkBrokerUrl, redactUrl, type KindSpec } from '../broker/config.ts';
import { ConnectionPool } from '../broker/pool.ts';

export interface RedisChannelOptions {
  policy: AddressPolicy;
  clock?: Clock;
  idleMs?: number;
  /** Bound on connecting (each delivery is also bounded by its own timeout). */
  connectTimeoutMs?: number;
}

const PERMANENT_REPLIES = /^(WRONGTYPE|NOAUTH|WRONGPASS|NOPERM|ERR unknown command)/;

export class RedisChannel implements Channel {
  private readonly clock: Clock;
  private readonly pool: ConnectionPool<Redis>;

  constructor(private readonly opts: RedisChannelOptions) {
    this.clock = opts.clock ?? new SystemClock();
    this.pool = new ConnectionPool<Redis>({
      clock: this.clock,
      idleMs: opts.idleMs,
      close: async (r) => void r.disconnect(),
    });
  }

  async deliver(event: DueEvent, signal: AbortSignal): Promise<DeliveryOutcome> {
    const target = event.broker!.target as RedisTarget;
    const key = event.broker!.poolKey;
    return brokerAttempt(event, signal, this.clock, 'redis', async () => {
      await this.pool.with(key, JSON.stringify(target), () => this.open(key, target), async (redis) => {
        const args: (string | Buffer | number)[] = [target.stream];
        if (target.maxLen !== null) args.push('MAXLEN', '~', target.maxLen);
        args.push('*', 'payload', messageBody(event));
        for (const [k, v] of Object.entries(messageHeaders(event))) args.push(k, v);
        await redis.xadd(...(args as [string, ...string[]]));
      });
    }, (err) => PERMANENT_REPLIES.test(String((err as Error)?.message ?? '')));
  }

  /** The destination was deleted or changed: its connection closes. */
  forget(poolKey: string): void {
    this.pool.drop(poolKey);
  }

  private async open(key: string, target: RedisTarget): Promise<Redis> {
    const url = new URL(target.url);
    const host = await guardedAddress(this.opts.policy, url.hostname);
    const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0;
    const redis = new Redis({
      host,
      port: url.port === '' ? 6379 : Number(url.port),
      username: url.username === '' ? undefined : decodeURIComponent(url.username),
      password: url.password === '' ? undefined : decodeURIComponent(url.password),
      db: Number.isInteger(db) ? db : 0,
      tls: url.protocol === 'rediss:' ? { servername: url.hostname } : undefined,
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
    try {
      await redis.connect();
    } catch (err) {
      redis.disconnect();
      throw err;
    }
    return redis;
  }

  async close(): Promise<void> {
    await this.pool.closeAll();
  }
}

/** Registration of a `redis` destination: `url` (redis:// or rediss://), `stream`, optional `maxLen`. */
export const redisSpec: KindSpec<RedisTarget, { url: string; stream: string; maxLen?: number }> = {
  parse(body, policy) {
    checkBrokerUrl('url', body.url, ['redis:', 'rediss:'], policy);
    return { kind: 'redis', url: body.url, stream: body.stream, maxLen: body.maxLen ?? null };
  },
  json: (t) => ({ url: redactUrl(t.url), stream: t.stream, maxLen: t.maxLen }),
};
