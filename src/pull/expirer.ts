/**
 * The pull expirer: a claimed pull event whose visibility timeout ended without an ack or nack is
 * a failed attempt. Each pass reads expired claims from their index (oldest first, in batches
 * until one comes back short) and settles each by its retry policy (settle.ts): due again
 * after the backoff, or archived once its attempts are spent or its expiry passed.
 *
 *   executing (pull, lease ended) ──settle 'expire' (conditional on the receipt)──▶ awaiting_retry | archived
 *
 * Every node runs it: the settle is conditional on the claim's receipt, so of two nodes (or an
 * expiry racing the consumer's late ack) exactly one applies and the other changes nothing.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { DestinationConfig } from '../core/destination.ts';
import type { EventRecord } from '../core/event.ts';
import { runEvery } from '../core/loop.ts';
import { decidePull, pullPolicy } from './settle.ts';
import type { Store } from '../store/store.ts';
import type { EventSink } from '../core/event-sink.ts';

export const PULL_EXPIRE_BATCH_MAX = 500;
export const PULL_EXPIRE_INTERVAL_MS = 500;

export interface PullExpirerDeps {
  store: Pick<Store, 'eventPullExpired' | 'eventPullSettle' | 'destinationGet'>;
  clock: Clock;
  /** The clock the claims' visibility timeouts were set by (see AppDeps.leaseClock). Default: `clock`. */
  leaseClock?: Clock;
  logger: Logger;
  random?: () => number;
  /** The events it settled (awaiting_retry or archived). */
  events: Pick<EventSink, 'pullSettled'>;
}

export class PullExpirer {
  private abort = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(
    private readonly deps: PullExpirerDeps,
    private readonly intervalMs = PULL_EXPIRE_INTERVAL_MS,
  ) {}

  /** One pass; returns how many claims it ended. */
  async runOnce(): Promise<number> {
    let total = 0;
    for (;;) {
      const now = this.deps.clock.now();
      const leaseNow = (this.deps.leaseClock ?? this.deps.clock).now();
      const expired = await this.deps.store.eventPullExpired({ now: leaseNow, limit: PULL_EXPIRE_BATCH_MAX });
      // Destinations read once per pass and tenant: a batch is mostly one queue's claims.
      const destinations = new Map<string, DestinationConfig | null>();
      const settled: EventRecord[] = [];
      for (const { event, receipt } of expired) {
        const name = 'name' in event.destination ? event.destination.name : null;
        const key = `${event.tenantId}\u0000${name ?? ''}`;
        if (!destinations.has(key)) {
          const d = name === null ? null : await this.deps.store.destinationGet({ tenantId: event.tenantId, name });
          destinations.set(key, d?.config ?? null);
        }
        const params = decidePull({
          event,
          receipt,
          end: { action: 'expire' },
          policy: pullPolicy(event, destinations.get(key) ?? null),
          now,
          random: this.deps.random ?? Math.random,
        });
        const after = await this.deps.store.eventPullSettle(params);
        if (after) settled.push(after);
      }
      total += settled.length;
      if (settled.length > 0) this.deps.events.pullSettled(settled);
      if (expired.length < PULL_EXPIRE_BATCH_MAX) return total;
    }
  }

  start(): void {
    this.abort = new AbortController();
    this.loop = runEvery(this.deps.clock, this.intervalMs, this.abort.signal, () =>
      this.runOnce().catch((err) => this.deps.logger.error({ err }, 'pull expiry failed')),
    );
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }
}
