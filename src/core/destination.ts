/**
 * A destination's stored settings, one typed shape per kind. The settings every kind shares
 * (headers, timeout, retry, rate limit, concurrency) sit beside the kind's own target.
 *
 * Credentials (passwords in URLs, SASL passwords, NATS tokens) are write-only: stored here, never
 * returned by the API (see redactUrl) and never logged.
 */
import type { RetryPolicy } from './backoff.ts';

export const DESTINATION_KINDS = ['http', 'kafka', 'nats', 'amqp', 'redis', 'pull'] as const;
export type DestinationKind = (typeof DESTINATION_KINDS)[number];

/** What every kind shares (durations in ms). */
export interface DestinationCommon {
  headers: Record<string, string>;
  timeoutMs: number;
  retry: RetryPolicy | null;
  rateLimitPerSecond: number | null;
  maxConcurrency: number;
}

export interface HttpTarget {
  kind: 'http';
  url: string;
}

export interface KafkaSasl {
  mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512';
  username: string;
  password: string;
}

export interface KafkaTarget {
  kind: 'kafka';
  /** `host:port` bootstrap servers. */
  brokers: string[];
  topic: string;
  sasl: KafkaSasl | null;
  ssl: boolean;
}

export interface NatsTarget {
  kind: 'nats';
  /** `nats://[user:password@]host:port` URLs. */
  servers: string[];
  subject: string;
  token: string | null;
}

export interface AmqpTarget {
  kind: 'amqp';
  /** `amqp[s]://[user:password@]host[:port][/vhost]`. */
  url: string;
  exchange: string;
  routingKey: string;
}

export interface RedisTarget {
  kind: 'redis';
  /** `redis[s]://[user:password@]host[:port][/db]`. */
  url: string;
  stream: string;
  /** Approximate cap on the stream's length (XADD MAXLEN ~); null: uncapped. */
  maxLen: number | null;
}

/**
 * A pull destination: nothing is pushed; consumers claim its due events over the API
 * (POST /v1/destinations/{name}/claim, then ack / nack / extend; see docs/pull.md).
 */
export interface PullTarget {
  kind: 'pull';
}

export type DestinationTarget = HttpTarget | KafkaTarget | NatsTarget | AmqpTarget | RedisTarget | PullTarget;
export type BrokerTarget = Exclude<DestinationTarget, HttpTarget>;

export type DestinationConfig = DestinationTarget & DestinationCommon;

/**
 * What the dispatcher needs to know of a kind without naming it: webhooks are signed and go to a
 * URL; the others are broker targets (with pooled connections), unsigned.
 */
export const KIND_TRAITS: Record<DestinationKind, { broker: boolean }> = {
  http: { broker: false },
  kafka: { broker: true },
  nats: { broker: true },
  amqp: { broker: true },
  redis: { broker: true },
  // Unsigned, like a broker's; the scheduler never fires its events (the store keeps them out of
  // the read-ahead), so its channel only answers for an event pushed before the kind was pull.
  pull: { broker: true },
};

/** Whether a destination's events are claimed by consumers rather than pushed. */
export function isPull(config: DestinationConfig): boolean {
  return config.kind === 'pull';
}

/** The broker target of a destination, or null for a webhook. */
export function brokerTargetOf(config: DestinationConfig): BrokerTarget | null {
  return KIND_TRAITS[config.kind].broker ? (targetOf(config) as BrokerTarget) : null;
}

/** Rows written before destinations had kinds carry none: they are webhooks. */
export function withKind(config: DestinationConfig): DestinationConfig {
  return config.kind === undefined ? ({ ...(config as object), kind: 'http' } as DestinationConfig) : config;
}

/** The target alone (no shared settings): the identity of a broker connection. */
export function targetOf(config: DestinationConfig): DestinationTarget {
  const { headers: _h, timeoutMs: _t, retry: _r, rateLimitPerSecond: _l, maxConcurrency: _c, ...target } = config;
  return target as DestinationTarget;
}

/** A URL with its password replaced by `***` (for responses and logs); unparsable text is hidden whole. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password === '') return url;
    u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}
