/**
 * The channel registry: the one place that maps a destination's `kind` to what serves it, the
 * channel that delivers and the spec that registers (checks and shows) its target. The registry
 * is itself a Channel, so the dispatcher holds one channel whatever the kinds.
 *
 *   DueEvent ─▶ registry.deliver ─▶ channels[event.broker?.target.kind ?? 'http'].deliver
 */
import type { AddressPolicy } from '../core/address.ts';
import type { Clock } from '../core/clock.ts';
import type { DestinationKind, DestinationTarget } from '../core/destination.ts';
import { AmqpChannel, amqpSpec } from './amqp/index.ts';
import type { KindSpec } from './broker/config.ts';
import type { Channel, DeliveryOutcome, DueEvent } from './channel.ts';
import { httpSpec } from './http/index.ts';
import { KafkaChannel, kafkaSpec } from './kafka/index.ts';
import { NatsChannel, natsSpec } from './nats/index.ts';
import { RedisChannel, redisSpec } from './redis/index.ts';
import { PullChannel, pullSpec } from './pull/index.ts';

/** A channel that pools connections per destination: `forget` closes one (deleted or changed). */
export interface PoolingChannel extends Channel {
  forget?(poolKey: string): void;
}

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
  http: Channel;
  policy: AddressPolicy;
  clock?: Clock;
  /** Broker connections close after this long unused. */
  idleMs?: number;
  /** Channels to use instead of the built-in ones (tests). */
  channels?: Partial<Record<DestinationKind, PoolingChannel>>;
}

export class ChannelRegistry implements Channel {
  private readonly channels: Record<DestinationKind, PoolingChannel>;

  constructor(opts: ChannelRegistryOptions) {
    const common = { policy: opts.policy, clock: opts.clock, idleMs: opts.idleMs };
    this.channels = {
      http: opts.http,
      kafka: opts.channels?.kafka ?? new KafkaChannel(common),
      nats: opts.channels?.nats ?? new NatsChannel(common),
      amqp: opts.channels?.amqp ?? new AmqpChannel(common),
      redis: opts.channels?.redis ?? new RedisChannel(common),
      pull: new PullChannel(),
      ...opts.channels,
    };
  }

  deliver(event: DueEvent, signal: AbortSignal): Promise<DeliveryOutcome> {
    const kind = event.broker?.target.kind ?? 'http';
    const channel = this.channels[kind];
    if (!channel) return Promise.resolve({ kind: 'discard', reason: `no channel delivers destinations of kind "${kind}"`, durationMs: 0 });
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
