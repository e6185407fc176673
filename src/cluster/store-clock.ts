/**
 * A Clock that follows the store's clock: every `calibrateEveryMs` it reads the store's clock
 * (PostgreSQL's) and between two readings it advances with the local monotonic clock, so a step of
 * this machine's wall clock (NTP, a VM resume, an operator) moves nothing: only the next
 * calibration against the store does. Each reading is biased so that this clock never runs ahead
 * of the store's. Due-time and lease decisions of a cluster then agree across nodes even when one
 * node's own clock is seconds off or jumps; timers and sleeps stay local.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { runEvery } from '../core/loop.ts';
import type { Store } from '../store/store.ts';

export class StoreClock implements Clock {
  /** Store time minus local monotonic time, as last measured (before the first: the local wall clock's). */
  private storeMinusMonoMs: number;
  private abort = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(
    private readonly local: Clock,
    private readonly store: Pick<Store, 'timeNow'>,
    private readonly logger: Logger,
    private readonly calibrateEveryMs = 5_000,
  ) {
    this.storeMinusMonoMs = local.now() - local.monotonicMs();
  }

  /** Store clock minus local wall clock, now. */
  get skewMs(): number {
    return this.now() - this.local.now();
  }

  now(): number {
    return Math.floor(this.local.monotonicMs() + this.storeMinusMonoMs);
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
   * Measures the store's clock once (best of three round trips) against the local monotonic
   * clock. The store read its clock somewhere inside the round trip, so `store − monotonic at
   * reply` is a lower bound of the true difference: this clock may run up to one round trip behind
   * the store's, never ahead of it, and so a due time is never judged reached early. Returns the
   * skew against the local wall clock (for status and logs only: nothing decides by it).
   */
  async calibrate(): Promise<number> {
    let best: { rttMs: number; storeMinusMonoMs: number } | null = null;
    for (let i = 0; i < 3; i++) {
      const t0 = this.local.monotonicMs();
      const storeMs = await this.store.timeNow();
      const t1 = this.local.monotonicMs();
      const rttMs = t1 - t0;
      if (!best || rttMs < best.rttMs) best = { rttMs, storeMinusMonoMs: storeMs - t1 };
    }
    const changed = Math.abs(best!.storeMinusMonoMs - this.storeMinusMonoMs) > 50;
    this.storeMinusMonoMs = best!.storeMinusMonoMs;
    const skewMs = this.skewMs;
    if (changed) this.logger.info({ skewMs, rttMs: best!.rttMs }, 'clock calibrated against the store');
    return skewMs;
  }

  start(): void {
    this.abort = new AbortController();
    this.loop = runEvery(this.local, this.calibrateEveryMs, this.abort.signal, () => this.calibrate(), {
      pauseFirst: true,
      onError: (err) => this.logger.warn({ err }, 'clock calibration failed'),
    });
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }
}
