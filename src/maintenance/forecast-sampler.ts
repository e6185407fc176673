/**
 * The forecast sampler: the due load of the next hour over every tenant, counted in the
 * background and published as gauges, so a scrape of /metrics reads memory and never the store.
 *
 *   start(): runOnce, then wait max(intervalMsMin, spacingFactor × the last count's duration);
 *            repeat (counting takes at most 1/spacingFactor of the time however many events are
 *            due ahead).
 *   runOnce(): one Store.eventForecast over [this minute, +60 min) in 1-minute buckets, all
 *            tenants; sets belfry_forecast_due_events{within} and belfry_forecast_spikes.
 *
 * Gauges:
 *   belfry_forecast_due_events{within="1m"|"5m"|"15m"|"60m"}  scheduled events due from the start
 *       of the current minute through the end of the next N minutes
 *   belfry_forecast_spikes  minute buckets of the next hour that the spike rule flags (core/forecast.ts)
 */
import { Gauge, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { spikes } from '../core/forecast.ts';
import type { Store } from '../store/store.ts';

export const FORECAST_SAMPLE_INTERVAL_MS_MIN = 15_000;
export const FORECAST_SAMPLE_SPACING_FACTOR = 20;
const MIN_MS = 60_000;
/** The minutes the gauge reports, as `within` labels. */
export const FORECAST_WITHIN_MINUTES = [1, 5, 15, 60] as const;

export interface ForecastSample {
  /** Events per minute bucket of the next hour, from the start of the current minute. */
  perMinute: number[];
  spikes: number;
  durationMs: number;
}

export class ForecastSampler {
  private readonly dueEvents: Gauge<'within'>;
  private readonly spikeBuckets: Gauge;
  private last: ForecastSample | null = null;
  private abort = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(
    private readonly deps: { store: Pick<Store, 'eventForecast'>; clock: Clock; logger: Logger; registry: Registry },
    private readonly opts = {
      intervalMsMin: FORECAST_SAMPLE_INTERVAL_MS_MIN,
      spacingFactor: FORECAST_SAMPLE_SPACING_FACTOR,
    },
  ) {
    this.dueEvents = new Gauge({
      name: 'belfry_forecast_due_events',
      help: 'Scheduled events (all tenants) due from the start of this minute through the next `within` minutes, counted in the background',
      labelNames: ['within'] as const,
      registers: [deps.registry],
    });
    this.spikeBuckets = new Gauge({
      name: 'belfry_forecast_spikes',
      help: 'Minutes of the next hour whose due load is a spike (at least 10 events and 4 times the median of the 5 minutes on either side)',
      registers: [deps.registry],
    });
  }

  latest(): ForecastSample | null {
    return this.last;
  }

  async runOnce(): Promise<ForecastSample> {
    const started = this.deps.clock.monotonicMs();
    const fromMs = Math.floor(this.deps.clock.now() / MIN_MS) * MIN_MS;
    const rows = await this.deps.store.eventForecast({
      tenantId: null,
      fromMs,
      toMs: fromMs + 60 * MIN_MS,
      bucketMs: MIN_MS,
      by: 'none',
    });
    const perMinute = new Array<number>(60).fill(0);
    for (const r of rows) perMinute[r.bucket] += r.n;
    let sum = 0;
    let next = 0;
    for (const within of FORECAST_WITHIN_MINUTES) {
      for (; next < within; next++) sum += perMinute[next];
      this.dueEvents.set({ within: `${within}m` }, sum);
    }
    const flagged = spikes(perMinute).filter(Boolean).length;
    this.spikeBuckets.set(flagged);
    this.last = { perMinute, spikes: flagged, durationMs: this.deps.clock.monotonicMs() - started };
    return this.last;
  }

  nextWaitMs(): number {
    return Math.max(this.opts.intervalMsMin, this.opts.spacingFactor * (this.last?.durationMs ?? 0));
  }

  start(): void {
    this.abort = new AbortController();
    const signal = this.abort.signal;
    this.loop = (async () => {
      while (!signal.aborted) {
        await this.runOnce().catch((err) =>
          this.deps.logger.warn({ err }, 'forecast for metrics failed; keeping the last sample'),
        );
        try {
          await this.deps.clock.sleep(this.nextWaitMs(), signal);
        } catch {
          return;
        }
      }
    })();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }
}
