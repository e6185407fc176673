/**
 * A queue's recent deliveries, for the destination health read (GET /v1/destinations/{name}/health):
 * a ring of the last RECENT_DELIVERIES_MAX attempts that reached the channel (fast failures of an
 * open circuit are not attempts), each its outcome and duration. Bounded memory per queue; the
 * figures are computed on read (a sort of at most that many durations), never on the delivery path.
 */
import type { DeliveryOutcome } from '../channels/channel.ts';

export const RECENT_DELIVERIES_MAX = 200;

export interface DeliveryStatsView {
  /** Attempts in the window (at most RECENT_DELIVERIES_MAX). */
  deliveries: number;
  /** Delivered ÷ attempts in the window; null with none. */
  successRate: number | null;
  /** The 99th percentile of the window's durations (nearest rank); null with none. */
  p99DurationMs: number | null;
}

export class DeliveryStats {
  private readonly ok = new Uint8Array(RECENT_DELIVERIES_MAX);
  private readonly durationMs = new Float64Array(RECENT_DELIVERIES_MAX);
  private count = 0;
  private next = 0;

  add(outcome: DeliveryOutcome): void {
    this.ok[this.next] = outcome.kind === 'delivered' ? 1 : 0;
    this.durationMs[this.next] = outcome.durationMs;
    this.next = (this.next + 1) % RECENT_DELIVERIES_MAX;
    if (this.count < RECENT_DELIVERIES_MAX) this.count++;
  }

  view(): DeliveryStatsView {
    if (this.count === 0) return { deliveries: 0, successRate: null, p99DurationMs: null };
    let delivered = 0;
    for (let i = 0; i < this.count; i++) delivered += this.ok[i];
    const sorted = this.durationMs.slice(0, this.count).sort();
    const rank = Math.max(0, Math.ceil(0.99 * this.count) - 1);
    return { deliveries: this.count, successRate: delivered / this.count, p99DurationMs: Math.round(sorted[rank]) };
  }
}
