/**
 * A token bucket: `perSecond` tokens flow in continuously up to `burst`; each delivery takes one.
 * take() never waits and never queues: it consumes a token and answers 0, or answers how long
 * until a token will be there, so the caller (a virtual queue) can park itself on a timer
 * instead of spinning. Time comes from the monotonic clock, so a wall-clock jump neither floods
 * a destination nor stalls it.
 */
import type { Clock } from '../core/clock.ts';

export interface TokenBucketOptions {
  /** Sustained rate, tokens per second; > 0. */
  perSecond: number;
  /** Bucket size: how many may go at once after a quiet spell. Default max(1, perSecond). */
  burst?: number;
}

export class TokenBucket {
  private readonly perMs: number;
  private readonly burst: number;
  private tokens: number;
  private refilledAtMs: number;

  constructor(
    opts: TokenBucketOptions,
    private readonly clock: Clock,
  ) {
    if (!(opts.perSecond > 0) || !Number.isFinite(opts.perSecond)) {
      throw new RangeError(`perSecond must be a positive finite number, got ${opts.perSecond}`);
    }
    const burst = opts.burst ?? Math.max(1, opts.perSecond);
    if (!(burst >= 1) || !Number.isFinite(burst)) throw new RangeError(`burst must be >= 1, got ${burst}`);
    this.perMs = opts.perSecond / 1000;
    this.burst = burst;
    this.tokens = burst; // a new bucket starts full
    this.refilledAtMs = clock.monotonicMs();
  }

  /** Returns 0 and consumes a token when one is available; else the ms until one will be. */
  take(): number {
    this.refill();
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    // Invariant: 0 <= tokens < 1 here, so the wait is positive and at most 1/perMs.
    // The epsilon absorbs float error (0.99 tokens at 10/s is 1.0000000000000009 ms short).
    return Math.max(1, Math.ceil((1 - this.tokens) / this.perMs - 1e-9));
  }

  /** Tokens available now (fractional); for metrics and tests. */
  get available(): number {
    this.refill();
    return this.tokens;
  }

  private refill(): void {
    const nowMs = this.clock.monotonicMs();
    const elapsedMs = nowMs - this.refilledAtMs;
    if (elapsedMs <= 0) return;
    this.tokens = Math.min(this.burst, this.tokens + elapsedMs * this.perMs);
    this.refilledAtMs = nowMs;
  }
}
