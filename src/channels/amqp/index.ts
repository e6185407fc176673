/**
 * The AMQP 0-9-1 (RabbitMQ) channel: one publish per attempt of a persistent, mandatory message
 * on a confirm channel; the broker's publisher confirm is the acknowledgement.
 *
 * Outcomes: ack → delivered · returned as unroutable (no queue bound for the routing key) → retry,
 * as a consumer may bind one later; the message is never silently dropped · nack → retry ·
 * NOT_FOUND (no such exchange), ACCESS_REFUSED (login or permission) → discard · a denied address
 * → discard · anything else (connection refused or lost, no confirm in time) → retry.
 *
 * One connection and one confirm channel per destination (ConnectionPool). A channel error (the
 * broker closes the channel, as it does on a missing exchange) fails the publishes in flight on
 * it with the broker's reason and drops the connection; the next delivery opens a new one.
 */
import amqp from 'amqplib';
import type { AddressPolicy } from '../../core/address.ts';
import { SystemClock, type Clock } from '../../core/clock.ts';
import type { AmqpTarget } from '../../core/destination.ts';
import type { Channel, DeliveryOutcome, DueEvent } from '../channel.ts';
import { brokerAttempt } from '../broker/attempt.ts';
import { guardedAddress } from '../broker/guard.ts';
import { messageBody, messageHeaders } from '../broker/message.ts';
import { checkBrokerUrl, redactUrl, type KindSpec } from '../broker/config.ts';
import { ConnectionPool } from '../broker/pool.ts';

export interface AmqpChannelOptions {
  policy: AddressPolicy;
  clock?: Clock;
  idleMs?: number;
  connectTimeoutMs?: number;
}

const PERMANENT = /NOT[_-]FOUND|ACCESS[_-]REFUSED/;

/** A pooled connection: its confirm channel and the publishes waiting for a confirm. */
interface Link {
  conn: amqp.ChannelModel;
  ch: amqp.ConfirmChannel;
  /** Message ids the broker returned as unroutable, until their confirm arrives. */
  returned: Set<string>;
  /** Rejects of the publishes in flight: a channel that closes fails them all. */
  waiting: Set<(err: Error) => void>;
  failure: Error | null;
}

let publishSeq = 0;

export class AmqpChannel implements Channel {
  private readonly clock: Clock;
  private readonly pool: ConnectionPool<Link>;

  constructor(private readonly opts: AmqpChannelOptions) {
    this.clock = opts.clock ?? new SystemClock();
    this.pool = new ConnectionPool<Link>({ clock: this.clock, idleMs: opts.idleMs, close: (l) => l.conn.close().catch(() => {}) });
  }

  async deliver(event: DueEvent, signal: AbortSignal): Promise<DeliveryOutcome> {
    const target = event.broker!.target as AmqpTarget;
    const key = event.broker!.poolKey;
    return brokerAttempt(event, signal, this.clock, 'amqp', async () => {
      await this.pool.with(key, JSON.stringify(target), () => this.open(key, target), (link) => publish(link, target, event));
    }, (err) => PERMANENT.test(String((err as Error)?.message ?? '')));
  }

  forget(poolKey: string): void {
    this.pool.drop(poolKey);
  }

  private async open(key: string, target: AmqpTarget): Promise<Link> {
    const url = new URL(target.url);
    const servername = url.hostname;
    const address = await guardedAddress(this.opts.policy, url.hostname);
    url.hostname = address.includes(':') ? `[${address}]` : address;
    const conn = await amqp.connect(url.toString(), { servername, timeout: this.opts.connectTimeoutMs ?? 10_000 });
    conn.on('error', () => {});
    let ch: amqp.ConfirmChannel;
    try {
      ch = await conn.createConfirmChannel();
    } catch (err) {
      await conn.close().catch(() => {});
      throw err;
    }
    const link: Link = { conn, ch, returned: new Set(), waiting: new Set(), failure: null };
    ch.on('return', (msg: amqp.Message) => {
      const id = msg.properties.messageId;
      if (typeof id === 'string') link.returned.add(id);
    });
    ch.on('error', (err: Error) => {
      link.failure = err;
    });
    const closed = () => {
      const err = link.failure ?? new Error('connection closed');
      for (const reject of link.waiting) reject(err);
      link.waiting.clear();
      this.pool.dropIf(key, link);
    };
    ch.on('close', closed);
    conn.on('close', closed);
    return link;
  }

  async close(): Promise<void> {
    await this.pool.closeAll();
  }
}

/** One publish, settled by its confirm, a return, or the channel closing under it. */
function publish(link: Link, target: AmqpTarget, event: DueEvent): Promise<void> {
  if (link.failure) return Promise.reject(link.failure);
  // The id that pairs a return with its confirm: unique per publish, as attempts may overlap.
  const messageId = `${event.id}#${event.attempt}#${++publishSeq}`;
  return new Promise<void>((resolve, reject) => {
    link.waiting.add(reject);
    const settle = (err: Error | null) => {
      link.waiting.delete(reject);
      const unroutable = link.returned.delete(messageId);
      // A closing channel fails its confirms before it reports why: the broker's reason wins.
      if (err) setImmediate(() => reject(link.failure ?? err));
      else if (unroutable) reject(new Error(`unroutable: no queue is bound to exchange "${target.exchange}" for routing key "${target.routingKey}"`));
      else resolve();
    };
    try {
      link.ch.publish(target.exchange, target.routingKey, messageBody(event), {
        persistent: true,
        mandatory: true,
        contentType: 'application/json',
        messageId,
        headers: messageHeaders(event),
      }, (err: unknown) => settle(err ? (err instanceof Error ? err : new Error('nacked by the broker')) : null));
    } catch (err) {
      link.waiting.delete(reject);
      reject(err);
    }
  });
}

/** Registration of an `amqp` destination: `url` (amqp:// or amqps://), `exchange`, `routingKey`. */
export const amqpSpec: KindSpec<AmqpTarget, { url: string; exchange: string; routingKey?: string }> = {
  parse(body, policy) {
    checkBrokerUrl('url', body.url, ['amqp:', 'amqps:'], policy);
    return { kind: 'amqp', url: body.url, exchange: body.exchange, routingKey: body.routingKey ?? '' };
  },
  json: (t) => ({ url: redactUrl(t.url), exchange: t.exchange, routingKey: t.routingKey }),
};
