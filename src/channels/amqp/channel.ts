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
 * it with the broker's reason and drops the connection; the next delivery opens a new one. A
 * connection whose publish got no confirm in time is destroyed (its socket, with what it still
 * buffered): amqplib's close() waits for the broker's Close-Ok, which a silent broker never sends.
 *
 * `amqps://` is TLS or nothing; credentials in an `amqp://` URL need `allowInsecureCredentials`.
 */
import net, { isIP } from 'node:net';
import amqp from 'amqplib';
import type { AddressPolicy } from '../../core/address.ts';
import { SystemClock, type Clock } from '../../core/clock.ts';
import type { AmqpTarget } from '../../core/destination.ts';
import type { Channel, DeliveryOutcome, DueEventOf } from '../channel.ts';
import { brokerAttempt } from '../broker/attempt.ts';
import { guardedAddress } from '../broker/guard.ts';
import { messageBody, messageHeaders } from '../broker/message.ts';
import { assertCredentialsTls, type InsecureCredentialsOptIn } from '../broker/config.ts';
import { ConnectionPool } from '../broker/pool.ts';
import { dieWith } from '../broker/sockets.ts';
import { clearCredentials } from './spec.ts';

export interface AmqpChannelOptions {
  policy: AddressPolicy;
  clock?: Clock;
  idleMs?: number;
  /** Bound on connecting, handshake included. */
  connectTimeoutMs?: number;
  connectionsMax?: number;
}

const PERMANENT = /NOT[_-]FOUND|ACCESS[_-]REFUSED/;
const AMQPS_PORT = 5671;

/** A TCP connection to `address`, destroyed when `signal` aborts (before or after it connected). */
function connectTcp(address: string, port: number, signal: AbortSignal): Promise<net.Socket> {
  return new Promise<net.Socket>((resolve, reject) => {
    const socket = net.connect({ host: address, port });
    dieWith(socket, signal);
    // Errors after the connect reach amqplib through the TLS socket over this one.
    socket.on('error', (err) => reject(err));
    socket.once('close', () => reject(new Error('connection closed')));
    socket.once('connect', () => resolve(socket));
  });
}

/** A pooled connection: its confirm channel and the publishes waiting for a confirm. */
interface Link {
  conn: amqp.ChannelModel;
  /** Destroys the socket (the pool's close, or an open given up). */
  kill: AbortController;
  ch: amqp.ConfirmChannel;
  /** Message ids the broker returned as unroutable, until their confirm arrives. */
  returned: Set<string>;
  /** Rejects of the publishes in flight: a channel that closes fails them all. */
  waiting: Set<(err: Error) => void>;
  failure: Error | null;
}

let publishSeq = 0;

export class AmqpChannel implements Channel<DueEventOf<'amqp'>> {
  private readonly clock: Clock;
  private readonly pool: ConnectionPool<Link>;

  constructor(private readonly opts: AmqpChannelOptions) {
    this.clock = opts.clock ?? new SystemClock();
    this.pool = new ConnectionPool<Link>({
      clock: this.clock,
      idleMs: opts.idleMs,
      connectionsMax: opts.connectionsMax,
      openTimeoutMs: opts.connectTimeoutMs,
      close: (l) => l.kill.abort(),
    });
  }

  async deliver(event: DueEventOf<'amqp'>, signal: AbortSignal): Promise<DeliveryOutcome> {
    const { target, poolKey: key } = event;
    return brokerAttempt(
      event,
      signal,
      this.clock,
      'amqp',
      async (ended) => {
        await this.pool.with(
          key,
          JSON.stringify(target),
          (opening) => this.open(key, target, opening),
          (link) => publish(link, target, event),
          ended,
        );
      },
      (err) => PERMANENT.test(String((err as Error)?.message ?? '')),
    );
  }

  forget(poolKey: string): void {
    this.pool.drop(poolKey);
  }

  private async open(key: string, target: AmqpTarget, signal: AbortSignal): Promise<Link> {
    assertCredentialsTls(clearCredentials(target), target as InsecureCredentialsOptIn);
    const url = new URL(target.url);
    const servername = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const address = await guardedAddress(this.opts.policy, url.hostname);
    signal.throwIfAborted();
    url.hostname = address.includes(':') ? `[${address}]` : address;
    // The socket dies with `kill`: at once, in the handshake or after it, whatever the broker says
    // or does not say. amqplib hands its socket options to net.connect (amqp://, which takes the
    // signal) or to tls.connect (amqps://, which gets a TCP socket Belfry opened and holds).
    const kill = new AbortController();
    signal.addEventListener('abort', () => kill.abort(), { once: true });
    // SNI names a host, never an address: Node 25+ refuses an IP as servername (the certificate is
    // then checked against the address amqplib connects to, which is the one the URL named).
    const socketOptions: Record<string, unknown> = { timeout: this.opts.connectTimeoutMs ?? 10_000 };
    if (isIP(servername) === 0) socketOptions.servername = servername;
    if (url.protocol === 'amqps:')
      socketOptions.socket = await connectTcp(address, url.port === '' ? AMQPS_PORT : Number(url.port), kill.signal);
    else socketOptions.signal = kill.signal;
    const conn = await amqp.connect(url.toString(), socketOptions);
    conn.on('error', () => {});
    let ch: amqp.ConfirmChannel;
    try {
      ch = await conn.createConfirmChannel();
    } catch (err) {
      kill.abort();
      throw err;
    }
    const link: Link = { conn, kill, ch, returned: new Set(), waiting: new Set(), failure: null };
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
function publish(link: Link, target: AmqpTarget, event: DueEventOf<'amqp'>): Promise<void> {
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
      else if (unroutable)
        reject(
          new Error(
            `unroutable: no queue is bound to exchange "${target.exchange}" for routing key "${target.routingKey}"`,
          ),
        );
      else resolve();
    };
    try {
      link.ch.publish(
        target.exchange,
        target.routingKey,
        messageBody(event),
        {
          persistent: true,
          mandatory: true,
          contentType: 'application/json',
          messageId,
          headers: messageHeaders(event),
        },
        (err: unknown) => settle(err ? (err instanceof Error ? err : new Error('nacked by the broker')) : null),
      );
    } catch (err) {
      link.waiting.delete(reject);
      reject(err);
    }
  });
}
