/**
 * The Channel seam: one delivery attempt of one event to one place. A channel returns an outcome
 * for every failure it can foresee (status codes, timeouts, refused connections); an exception
 * thrown from deliver() is a bug, and the dispatcher treats it as a retryable failure.
 */
import type { BrokerTarget } from '../core/destination.ts';

/** Everything a channel needs to deliver one event once. */
export interface DueEvent {
  tenantId: string;
  id: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** The payload as JSON text, sent as the body unchanged. */
  payload: string;
  /** The user's headers: the destination's, overlaid by the event's. */
  headers: Record<string, string>;
  /** Where to send it (for HTTP, the URL). */
  target: string;
  /** Signing secrets, newest first; empty means unsigned. */
  secrets: string[];
  timeoutMs: number;
  /** Due time of this attempt, for the trace. */
  dueAt: number;
  /** The event's fireAt (brokers carry it as `belfry-fire-at`); defaults to dueAt. */
  fireAt?: number;
  group?: string | null;
  /** The event's type (`order.timeout`): brokers carry it as `belfry-type` when set. */
  type?: string | null;
  /**
   * Set for a broker destination: its typed target and the key its pooled connection is kept
   * under (one per tenant and destination name). Absent: an HTTP delivery to `target`.
   */
  broker?: { poolKey: string; target: BrokerTarget };
}

export type DeliveryOutcome =
  | { kind: 'delivered'; status?: number; durationMs: number }
  | { kind: 'retry'; reason: string; status?: number; retryAfterMs?: number; durationMs: number }
  | { kind: 'discard'; reason: string; status?: number; durationMs: number };

export interface Channel {
  deliver(event: DueEvent, signal: AbortSignal): Promise<DeliveryOutcome>;
  /** Closes pooled connections; in-flight deliveries end first or are aborted by their signal. */
  close(): Promise<void>;
  /** The destination pooled under `poolKey` was deleted or changed: close its connection (brokers). */
  forget?(poolKey: string): void;
}
