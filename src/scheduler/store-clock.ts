/**
 * A Clock that follows the store's clock: wall time is the local clock plus an offset measured
 * against the store (PostgreSQL's clock) every `calibrateEveryMs`, biased so that it never runs
 * ahead of the store's. Due-time decisions of a cluster then agree across nodes even when one node's own clock is
 * seconds off; monotonic time, timers and sleeps stay local.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { Store } from '../store/store.ts';

export class StoreClock implements Clock {
  private offsetMs = 0;
  private abort = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(
    private readonly local: Clock,
    private readonly store: Pick<Store, 'timeNow'>,
    private readonly logger: Logger,
    private readonly calibrateEveryMs = 5_000,
  ) {}

  /** Store clock minus local clock, as last measured. */
  get skewMs(): number {
    return this.offsetMs;
  }

  now(): number {
    return this.local.now() + this.offsetMs;
  }
  monotonicMs(): number {
    return this.local.monotonicMs();
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.local.sleep(ms, signal);
  }
  setTimer(ms: number, fn: () => void): () => void {
    return this.local.setTimer(ms, fn);
  }

  /**
   * Measures the offset once (best of three round trips). The store read its clock somewhere
   * inside the round trip, so `store − local-at-reply` is a lower bound of the true offset: this
   * clock may run up to one round trip behind the store's, never ahead of it, and so a due time
   * is never judged reached early.
   */
  async calibrate(): Promise<number> {
    let best: { rttMs: number; offsetMs: number } | null = null;
    for (let i = 0; i < 3; i++) {
      const t0 = this.local.monotonicMs();
      const storeMs = await this.store.timeNow();
      const rttMs = this.local.monotonicMs() - t0;
      const offsetMs = storeMs - this.local.now();
      if (!best || rttMs < best.rttMs) best = { rttMs, offsetMs };
    }
    const changed = Math.abs(best!.offsetMs - this.offsetMs) > 50;
    this.offsetMs = Math.floor(best!.offsetMs);
    if (changed) this.logger.info({ skewMs: this.offsetMs, rttMs: best!.rttMs }, 'clock calibrated against the store');
    return this.offsetMs;
  }

  start(): void {
    this.abort = new AbortController();
    this.loop = (async () => {
      for (;;) {
        try {
          await this.local.sleep(this.calibrateEveryMs, this.abort.signal);
        } catch {
          return;
        }
        await this.calibrate().catch((err) => this.logger.warn({ err }, 'clock calibration failed'));
      }
    })();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }
}
