/**
 * The Channel seam: one delivery attempt of one event to one place. A channel returns an outcome
 * for every failure it can foresee (status codes, timeouts, refused connections); an exception
 * thrown from deliver() is a bug, and the dispatcher treats it as a retryable failure.
 *
 * What a channel is handed, DueEvent, is one shape per destination kind, told apart by `kind`:
 * a webhook's URL and signing secrets (the HTTP channel signs), a broker's typed target and the
 * key its pooled connection is kept under. Each channel takes the shape of its own kind
 * (`Channel<DueEventOf<'kafka'>>`); the registry hands each event to the channel of its kind.
 */
import type { BrokerTarget, DestinationKind } from '../core/destination.ts';

/** What every kind's delivery carries of its event. */
export interface DueEventCommon {
  tenantId: string;
  id: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** The payload as JSON text, sent as the body unchanged. */
  payload: string;
  /** The user's headers: the destination's, overlaid by the event's. */
  headers: Record<string, string>;
  timeoutMs: number;
  /** Due time of this attempt, for the trace. */
  dueAt: number;
  /** The event's fireAt (brokers carry it as `belfry-fire-at`); defaults to dueAt. */
  fireAt?: number;
  group?: string | null;
  /** The event's type (`order.timeout`): webhooks and brokers carry it as `belfry-type` when set. */
  type?: string | null;
}

/** A webhook signing secret: `whsec_` + base64; it signs until `expiresAt` (null: until replaced). */
export interface SigningSecret {
  secret: string;
  expiresAt: number | null;
}

/** A delivery to a webhook. */
export interface HttpDueEvent extends DueEventCommon {
  kind: 'http';
  /** The URL to POST to. */
  target: string;
  /**
   * The destination's signing secrets (the tenant's for an inline URL), newest first. The HTTP
   * channel signs with those not expired when it sends; with none, it discards the delivery:
   * a webhook is never sent unsigned.
   */
  secrets: readonly SigningSecret[];
}

/** A delivery to a broker destination of kind T['kind']. */
export interface BrokerDueEvent<T extends BrokerTarget = BrokerTarget> extends DueEventCommon {
  kind: T['kind'];
  target: T;
  /** The key its pooled connection is kept under: one per tenant and destination name. */
  poolKey: string;
}

type BrokerKind = BrokerTarget['kind'];

/** What a channel is handed: one shape per destination kind. */
export type DueEvent =
  | HttpDueEvent
  | { [K in BrokerKind]: BrokerDueEvent<Extract<BrokerTarget, { kind: K }>> }[BrokerKind];

/** The delivery a channel of kind K is handed. */
export type DueEventOf<K extends DestinationKind> = Extract<DueEvent, { kind: K }>;

/** A broker delivery to `target` (its kind is the target's). */
export function brokerDueEvent(common: DueEventCommon, target: BrokerTarget, poolKey: string): DueEvent {
  // The kind is the target's own, so the pair is always one of the union's members.
  return { ...common, kind: target.kind, target, poolKey } as DueEvent;
}

export type DeliveryOutcome =
  | { kind: 'delivered'; status?: number; durationMs: number }
  | { kind: 'retry'; reason: string; status?: number; retryAfterMs?: number; durationMs: number }
  | { kind: 'discard'; reason: string; status?: number; durationMs: number };

export interface Channel<E extends DueEvent = DueEvent> {
  deliver(event: E, signal: AbortSignal): Promise<DeliveryOutcome>;
  /** Closes pooled connections; in-flight deliveries end first or are aborted by their signal. */
  close(): Promise<void>;
  /** The destination pooled under `poolKey` was deleted or changed: close its connection (brokers). */
  forget?(poolKey: string): void;
}
