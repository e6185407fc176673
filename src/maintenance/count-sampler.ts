/**
 * The count sampler: events per state and pending events per tenant, counted in the background
 * and served from memory. The /metrics gauges and the pending quota read the latest sample; no
 * request counts the table (counting 10,000,000 events takes seconds, and on the SQLite store it
 * used to do so on the event loop at every scrape, delaying every fire by as long).
 *
 *   start(): runOnce, then wait max(intervalMsMin, spacingFactor × the last count's duration ×
 *            the nodes sharing the store), so counting takes at most 1/spacingFactor of the
 *            store's time however large the table and however many nodes count it; repeat.
 *   runOnce(): one count (Store.eventCountByTenantState), kept as the latest sample; concurrent
 *            callers share the count in flight.
 *
 * Why sampled rather than counted as events change (a counts row per (tenant, state) updated in
 * each state change's transaction): counts kept so cost every insert, claim and outcome of every
 * event (measured in docs/operations.md), and on PostgreSQL every node's writes of a tenant meet
 * on the same rows, to keep exact a figure that a scrape every 15 s does not need exact. A sample
 * costs the hot path nothing; its price is its age, which is a gauge
 * (belfry_events_sample_age_seconds).
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { EVENT_STATES, type EventState, LIVE_STATES } from '../core/event.ts';
import type { Store } from '../store/store.ts';

export const SAMPLE_INTERVAL_MS_MIN = 15_000;
/** Samples are at least this many times their own duration apart: counting takes ≤ 5% of the time. */
export const SAMPLE_SPACING_FACTOR = 20;
/** Tenants whose pending count a sample keeps, the largest first (rows beyond are summed into byState only). */
export const SAMPLE_TENANTS_MAX = 100_000;

const PENDING_STATES: ReadonlySet<EventState> = new Set(LIVE_STATES);

export interface CountSample {
  /** Events per state over all tenants. */
  byState: Record<EventState, number>;
  /** Pending events (scheduled, executing, awaiting_retry) of each tenant that had any. */
  pendingByTenant: Map<string, number>;
  /**
   * Whether pendingByTenant holds every tenant that had pending events. When it does not (more
   * than SAMPLE_TENANTS_MAX), a tenant missing from it had at most `pendingLeastKept`.
   */
  complete: boolean;
  /** The smallest count kept in pendingByTenant (0 when empty). */
  pendingLeastKept: number;
  /** Monotonic ms when the count began: changes after it may be missing from the sample. */
  startedAtMs: number;
  durationMs: number;
}

export interface CountSamplerDeps {
  store: Pick<Store, 'eventCountByTenantState'>;
  clock: Clock;
  logger: Logger;
  /** Nodes that count the same store (the live nodes of a cluster); 1 when absent. */
  sharers?: () => Promise<number>;
}

export interface CountSamplerOptions {
  intervalMsMin: number;
  spacingFactor: number;
}

/** Folds (tenant, state) counts into a sample. */
export function toSample(
  rows: { tenantId: string; state: EventState; n: number }[],
  startedAtMs: number,
  durationMs: number,
): CountSample {
  const byState = Object.fromEntries(EVENT_STATES.map((s) => [s, 0])) as Record<EventState, number>;
  const pending = new Map<string, number>();
  for (const r of rows) {
    byState[r.state] = (byState[r.state] ?? 0) + r.n;
    if (PENDING_STATES.has(r.state)) pending.set(r.tenantId, (pending.get(r.tenantId) ?? 0) + r.n);
  }
  let entries = [...pending.entries()];
  const complete = entries.length <= SAMPLE_TENANTS_MAX;
  if (!complete) entries = entries.sort((a, b) => b[1] - a[1]).slice(0, SAMPLE_TENANTS_MAX);
  const pendingByTenant = new Map(entries);
  const pendingLeastKept = entries.reduce((least, [, n]) => Math.min(least, n), entries.length === 0 ? 0 : Infinity);
  return { byState, pendingByTenant, complete, pendingLeastKept, startedAtMs, durationMs };
}

export class CountSampler {
  private last: CountSample | null = null;
  private inFlight: Promise<CountSample> | null = null;
  private abort = new AbortController();
  private loop: Promise<void> | null = null;
  private readonly startListeners: (() => void)[] = [];
  private readonly sampleListeners: ((sample: CountSample) => void)[] = [];
  private readonly opts: CountSamplerOptions;

  constructor(
    private readonly deps: CountSamplerDeps,
    opts: Partial<CountSamplerOptions> = {},
  ) {
    this.opts = { intervalMsMin: SAMPLE_INTERVAL_MS_MIN, spacingFactor: SAMPLE_SPACING_FACTOR, ...opts };
  }

  /** The latest sample, or null before the first count ends. */
  latest(): CountSample | null {
    return this.last;
  }

  /** Monotonic ms since the latest sample's count began; null before the first. */
  ageMs(): number | null {
    return this.last === null ? null : this.deps.clock.monotonicMs() - this.last.startedAtMs;
  }

  /** Whether a count is running now. */
  counting(): boolean {
    return this.inFlight !== null;
  }

  /** Calls `fn` whenever a count begins (before it reads anything), so callers can tell what came after. */
  onCountStart(fn: () => void): void {
    this.startListeners.push(fn);
  }

  /** Calls `fn` with every new sample, before runOnce resolves. */
  onSample(fn: (sample: CountSample) => void): void {
    this.sampleListeners.push(fn);
  }

  /** One count; resolves with the new sample. A call while a count runs shares it. */
  runOnce(): Promise<CountSample> {
    this.inFlight ??= this.count().finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  private async count(): Promise<CountSample> {
    const startedAtMs = this.deps.clock.monotonicMs();
    for (const fn of this.startListeners) fn();
    const rows = await this.deps.store.eventCountByTenantState();
    const sample = toSample(rows, startedAtMs, this.deps.clock.monotonicMs() - startedAtMs);
    this.last = sample;
    for (const fn of this.sampleListeners) fn(sample);
    return sample;
  }

  /** How long to wait after a count before the next one, when `sharers` nodes count the same store. */
  nextWaitMs(sharers = 1): number {
    return Math.max(
      this.opts.intervalMsMin,
      this.opts.spacingFactor * (this.last?.durationMs ?? 0) * Math.max(1, sharers),
    );
  }

  private async sharers(): Promise<number> {
    if (!this.deps.sharers) return 1;
    return this.deps.sharers().catch(() => 1);
  }

  start(): void {
    this.abort = new AbortController();
    const signal = this.abort.signal;
    this.loop = (async () => {
      while (!signal.aborted) {
        await this.runOnce().catch((err) =>
          this.deps.logger.warn({ err }, 'counting events for metrics and quotas failed; keeping the last sample'),
        );
        try {
          await this.deps.clock.sleep(this.nextWaitMs(await this.sharers()), signal);
        } catch {
          return;
        }
      }
    })();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    await this.inFlight?.catch(() => {});
  }
}
