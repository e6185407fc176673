/**
 * The Kafka channel (KafkaJS): one produce per attempt with `acks: -1`; the ack from all in-sync
 * replicas is the acknowledgement. The message key is the group (or the event id), so a group
 * stays on one partition, in order; the dispatcher sends a group's events one at a time.
 *
 * Outcomes: acked → delivered · no such topic, not authorised (topic, cluster, SASL), a message
 * the broker will never take (too large, invalid) → discard · a denied address → discard ·
 * anything else (connection refused or lost, leader moving, no ack in time) → retry.
 *
 * Deliveries that start together go out as one produce request (ProduceBatcher).
 * One client and producer per destination (ConnectionPool), not idempotent (KafkaJS's idempotent
 * producer needs a controller some clusters, such as librdkafka's mock, do not name; consumers drop
 * duplicates by `belfry-event-id`). Every socket, to the bootstrap servers and to the brokers the
 * cluster's metadata names, passes the private-address guard, and dies with its producer: a
 * connection whose produce got no ack in time is destroyed (KafkaJS's disconnect only half-closes
 * its sockets, after waiting for the requests in flight, which a silent broker never answers).
 *
 * `ssl: true` is TLS or nothing (every socket is a TLS one). SASL PLAIN without it sends the
 * password as it is: it needs `allowInsecureCredentials` (SCRAM never sends the password).
 */
import net from 'node:net';
import tls from 'node:tls';
import { Kafka, logLevel, type ISocketFactory, type Producer, type SASLOptions } from 'kafkajs';
import { normalizeHost, parseIp, type AddressPolicy } from '../../core/address.ts';
import { SystemClock, type Clock } from '../../core/clock.ts';
import type { KafkaTarget } from '../../core/destination.ts';
import type { Channel, DeliveryOutcome, DueEventOf } from '../channel.ts';
import { brokerAttempt } from '../broker/attempt.ts';
import { assertCredentialsTls, type InsecureCredentialsOptIn } from '../broker/config.ts';
import { AddressDeniedError, isAddressDenied } from '../broker/guard.ts';
import { messageBody, messageHeaders, messageKey } from '../broker/message.ts';
import { ConnectionPool } from '../broker/pool.ts';
import { ProduceBatcher } from './batcher.ts';
import { guardedLookup } from '../http/guarded-connect.ts';
import { dieWith } from '../broker/sockets.ts';
import { clearCredentials } from './spec.ts';

export interface KafkaChannelOptions {
  policy: AddressPolicy;
  clock?: Clock;
  idleMs?: number;
  /** Bound on connecting, handshake (and SASL) included. */
  connectTimeoutMs?: number;
  connectionsMax?: number;
}

/** Kafka error types no retry can fix. */
const PERMANENT_TYPES = new Set([
  'UNKNOWN_TOPIC_OR_PARTITION',
  'TOPIC_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
  'SASL_AUTHENTICATION_FAILED',
  'INVALID_TOPIC_EXCEPTION',
  'MESSAGE_TOO_LARGE',
  'RECORD_LIST_TOO_LARGE',
  'INVALID_RECORD',
  'UNSUPPORTED_SASL_MECHANISM',
]);
const PERMANENT_NAMES = new Set(['KafkaJSSASLAuthenticationError']);
const PERMANENT_MESSAGES = /Not authorized|authorization failed|does not host this topic-partition/i;

/** True when the error, or one it wraps, is a refusal no retry can fix. */
export function kafkaPermanent(err: unknown): boolean {
  for (
    let e = err as Record<string, unknown> | undefined, depth = 0;
    e && depth < 5;
    e = (e.originalError ?? e.cause) as typeof e, depth++
  ) {
    if (PERMANENT_TYPES.has(String(e.type)) || PERMANENT_NAMES.has(String(e.name))) return true;
    if (e.retriable === false && PERMANENT_MESSAGES.test(String(e.message))) return true;
    if (PERMANENT_MESSAGES.test(String(e.message)) && String(e.name).startsWith('KafkaJS')) return true;
  }
  return false;
}

/**
 * A socket factory that applies the address policy to every broker KafkaJS connects to; every
 * socket it makes is destroyed when `signal` aborts (the client is closed or given up).
 */
export function guardedSocketFactory(policy: AddressPolicy, signal?: AbortSignal): ISocketFactory {
  const lookup = guardedLookup(policy);
  return ({ host, port, ssl, onConnect }) => {
    const h = normalizeHost(host);
    if (parseIp(h)) {
      const why = policy.checkAddress(h, h);
      if (why) {
        const socket = new net.Socket();
        process.nextTick(() => socket.destroy(new AddressDeniedError(why)));
        return socket;
      }
    }
    const socket = ssl
      ? tls.connect(
          { host, port, ...(parseIp(h) ? {} : { servername: host }), lookup, ...(typeof ssl === 'object' ? ssl : {}) },
          onConnect,
        )
      : net.connect({ host, port, lookup }, onConnect);
    socket.setKeepAlive(true, 30_000);
    // KafkaJS puts its 'error' listener on the socket as soon as this returns.
    dieWith(socket, signal, true);
    return socket;
  };
}

/** A pooled producer and the batcher that coalesces its sends. */
interface Link {
  producer: Producer;
  batcher: ProduceBatcher;
  /** Destroys every socket of the producer. */
  kill: AbortController;
}

/** Closes a producer at once: its sockets first, then KafkaJS's own state (not waited for). */
function destroy(link: Link): void {
  link.kill.abort();
  link.producer.disconnect().catch(() => {});
}

export class KafkaChannel implements Channel<DueEventOf<'kafka'>> {
  private readonly clock: Clock;
  private readonly pool: ConnectionPool<Link>;

  constructor(private readonly opts: KafkaChannelOptions) {
    this.clock = opts.clock ?? new SystemClock();
    this.pool = new ConnectionPool<Link>({
      clock: this.clock,
      idleMs: opts.idleMs,
      connectionsMax: opts.connectionsMax,
      openTimeoutMs: opts.connectTimeoutMs,
      close: destroy,
    });
  }

  async deliver(event: DueEventOf<'kafka'>, signal: AbortSignal): Promise<DeliveryOutcome> {
    const { target, poolKey: key } = event;
    return brokerAttempt(
      event,
      signal,
      this.clock,
      'kafka',
      async (ended) => {
        await this.pool.with(
          key,
          JSON.stringify(target),
          (opening) => this.open(key, target, event.timeoutMs, opening),
          (link) =>
            link.batcher.add({ key: messageKey(event), value: messageBody(event), headers: messageHeaders(event) }),
          ended,
        );
      },
      (err) => kafkaPermanent(err) && !isAddressDenied(err),
    );
  }

  forget(poolKey: string): void {
    this.pool.drop(poolKey);
  }

  private async open(key: string, target: KafkaTarget, timeoutMs: number, signal: AbortSignal): Promise<Link> {
    assertCredentialsTls(clearCredentials(target), target as InsecureCredentialsOptIn);
    const kill = new AbortController();
    signal.addEventListener('abort', () => kill.abort(), { once: true });
    const kafka = new Kafka({
      clientId: 'belfry',
      brokers: target.brokers,
      ssl: target.ssl,
      sasl: target.sasl
        ? ({
            mechanism: target.sasl.mechanism,
            username: target.sasl.username,
            password: target.sasl.password,
          } as SASLOptions)
        : undefined,
      connectionTimeout: this.opts.connectTimeoutMs ?? 10_000,
      requestTimeout: 30_000,
      // Retries are Belfry's (with backoff, in the trace), not hidden inside the client.
      retry: { retries: 0 },
      socketFactory: guardedSocketFactory(this.opts.policy, kill.signal),
      // KafkaJS's own logs would carry broker addresses and SASL errors: Belfry reports outcomes.
      logLevel: logLevel.NOTHING,
    });
    const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: false });
    try {
      await producer.connect();
    } catch (err) {
      kill.abort();
      await producer.disconnect().catch(() => {});
      throw err;
    }
    const link: Link = {
      producer,
      kill,
      batcher: new ProduceBatcher(async (messages) => {
        try {
          await producer.send({ topic: target.topic, acks: -1, timeout: timeoutMs, messages });
        } catch (err) {
          // A lost connection is not always reopened by the producer: the next delivery opens anew.
          if (!kafkaPermanent(err)) this.pool.dropIf(key, link);
          throw err;
        }
      }),
    };
    return link;
  }

  async close(): Promise<void> {
    await this.pool.closeAll();
  }
}
