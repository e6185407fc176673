/**
 * The channel registry: the one place that maps a destination's `kind` to what serves it, the
 * channel that delivers and the spec that registers (checks and shows) its target. The registry
 * is itself a Channel, so the dispatcher holds one channel whatever the kinds.
 *
 *   DueEvent ─▶ registry.deliver ─▶ channels[event.kind].deliver (each channel takes its kind's DueEvent)
 *
 * Broker channels are loaded on first use: a kind's spec (spec.ts, no client library) is imported
 * here, its channel (channel.ts, with kafkajs, amqplib, ioredis or the NATS client) only when
 * a delivery to a destination of that kind first happens. A node that delivers only to webhooks
 * never loads a broker client.
 */
import type { AddressPolicy } from '../core/address.ts';
import type { Clock } from '../core/clock.ts';
import type { DestinationKind, DestinationTarget } from '../core/destination.ts';
import { amqpSpec } from './amqp/spec.ts';
import type { KindSpec } from './broker/config.ts';
import type { Channel, DeliveryOutcome, DueEvent, DueEventOf, HttpDueEvent } from './channel.ts';
import { httpSpec } from './http/index.ts';
import { kafkaSpec } from './kafka/spec.ts';
import { natsSpec } from './nats/spec.ts';
import { redisSpec } from './redis/spec.ts';
import { PullChannel, pullSpec } from './pull/index.ts';

/** A channel that pools connections per destination: `forget` closes one (deleted or changed). */
export interface PoolingChannel<E extends DueEvent = DueEvent> extends Channel<E> {
  forget?(poolKey: string): void;
}

/** For each kind, the channel that delivers its events. */
type ChannelsByKind = { [K in DestinationKind]: PoolingChannel<DueEventOf<K>> };

/** How each kind's target is registered and shown. */
export const KIND_SPECS: { [K in DestinationKind]: KindSpec<Extract<DestinationTarget, { kind: K }>, never> } = {
  http: httpSpec,
  kafka: kafkaSpec,
  nats: natsSpec,
  amqp: amqpSpec,
  redis: redisSpec,
  pull: pullSpec,
};

/** The typed target of a registration body the schema accepted; a 400 naming the field otherwise. */
export function parseTarget(kind: DestinationKind, body: unknown, policy: AddressPolicy): DestinationTarget {
  return (KIND_SPECS[kind] as KindSpec<DestinationTarget, unknown>).parse(body, policy);
}

/** A target's fields as the API shows them (no credentials). */
export function targetJson(target: DestinationTarget): Record<string, unknown> {
  return (KIND_SPECS[target.kind] as KindSpec<DestinationTarget, unknown>).json(target);
}

export interface ChannelRegistryOptions {
  /** The webhook channel (the node's, which may run on worker threads). */
  http: Channel<HttpDueEvent>;
  policy: AddressPolicy;
  clock?: Clock;
  /** Broker connections close after this long unused. */
  idleMs?: number;
  /** Channels to use instead of the built-in ones (tests). */
  channels?: Partial<ChannelsByKind>;
}

/**
 * A channel whose module (and so its client library) is loaded on its first delivery. A load
 * that fails (the library missing) fails each delivery as a transient error, naming why.
 */
export class LazyChannel<E extends DueEvent = DueEvent> implements PoolingChannel<E> {
  private loading: Promise<PoolingChannel<E>> | null = null;
  private loaded: PoolingChannel<E> | null = null;

  constructor(private readonly load: () => Promise<PoolingChannel<E>>) {}

  /** Whether the channel has been loaded (a delivery asked for it). */
  get isLoaded(): boolean {
    return this.loaded !== null;
  }

  deliver(event: E, signal: AbortSignal): Promise<DeliveryOutcome> {
    this.loading ??= this.load().then((channel) => (this.loaded = channel));
    return this.loading.then(
      (channel) => channel.deliver(event, signal),
      (err: unknown) => ({
        kind: 'retry',
        reason: `loading the channel failed: ${(err as Error).message}`,
        durationMs: 0,
      }),
    );
  }

  forget(poolKey: string): void {
    this.loaded?.forget?.(poolKey);
  }

  async close(): Promise<void> {
    const channel = await this.loading?.catch(() => null);
    await channel?.close();
  }
}

export class ChannelRegistry implements Channel {
  private readonly channels: ChannelsByKind;

  constructor(opts: ChannelRegistryOptions) {
    const common = { policy: opts.policy, clock: opts.clock, idleMs: opts.idleMs };
    this.channels = {
      http: opts.http,
      kafka:
        opts.channels?.kafka ??
        new LazyChannel(async () => new (await import('./kafka/channel.ts')).KafkaChannel(common)),
      nats:
        opts.channels?.nats ?? new LazyChannel(async () => new (await import('./nats/channel.ts')).NatsChannel(common)),
      amqp:
        opts.channels?.amqp ?? new LazyChannel(async () => new (await import('./amqp/channel.ts')).AmqpChannel(common)),
      redis:
        opts.channels?.redis ??
        new LazyChannel(async () => new (await import('./redis/channel.ts')).RedisChannel(common)),
      pull: new PullChannel(),
      ...opts.channels,
    };
  }

  deliver(event: DueEvent, signal: AbortSignal): Promise<DeliveryOutcome> {
    const kind = event.kind;
    // channels[kind] takes the events of that kind, and this event is one of them.
    const channel = this.channels[kind] as PoolingChannel<DueEvent> | undefined;
    if (!channel)
      return Promise.resolve({
        kind: 'discard',
        reason: `no channel delivers destinations of kind "${kind}"`,
        durationMs: 0,
      });
    return channel.deliver(event, signal);
  }

  /** A destination was deleted or changed: every channel closes its pooled connection. */
  forget(poolKey: string): void {
    for (const channel of Object.values(this.channels)) channel.forget?.(poolKey);
  }

  async close(): Promise<void> {
    await Promise.all(Object.values(this.channels).map((c) => c.close()));
  }
}
