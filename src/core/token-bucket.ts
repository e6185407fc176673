/**
 * A token bucket: `perSecond` tokens flow in continuously up to `burst`; each take takes one.
 * The one bucket of the code: a destination's delivery rate (dispatch/virtual-queue.ts) and a
 * tenant's scheduleRequestsPerSecond (api/tenant-quotas.ts, whose rate may change between calls:
 * setRate). take() and takeUpTo() never wait and never queue: they consume what is there and
 * answer how long until a token will be, so the caller can park itself on a timer (a virtual
 * queue), answer 429 with Retry-After (the API) or wait (a source's reader) instead of spinning.
 * Time comes from the monotonic clock, so a wall-clock jump neither floods nor stalls anyone.
 */
import type { Clock } from './clock.ts';

export interface TokenBucketOptions {
  /** Sustained rate, tokens per second; > 0. */
  perSecond: number;
  /** Bucket size: how many may go at once after a quiet spell. Default max(1, perSecond). */
  burst?: number;
}

export class TokenBucket {
  private perMs: number;
  private burst: number;
  private tokens: number;
  private refilledAtMs: number;

  constructor(
    opts: TokenBucketOptions,
    private readonly clock: Clock,
  ) {
    const { perMs, burst } = checkedRate(opts);
    this.perMs = perMs;
    this.burst = burst;
    this.tokens = burst; // a new bucket starts full
    this.refilledAtMs = clock.monotonicMs();
  }

  /**
   * A new rate (and burst, default max(1, perSecond)) from now on: the tokens gathered so far are
   * kept up to the new burst, and the time since the last refill flows in at the new rate.
   */
  setRate(opts: TokenBucketOptions): void {
    const { perMs, burst } = checkedRate(opts);
    this.perMs = perMs;
    this.burst = burst;
    this.refill();
    this.tokens = Math.min(this.burst, this.tokens);
  }

  /**
   * Takes up to `want` whole tokens at once (as many as there are). When it takes none, `waitMs`
   * says how long until one will be there (at least 1); otherwise it is 0.
   */
  takeUpTo(want: number): { granted: number; waitMs: number } {
    this.refill();
    const granted = Math.max(0, Math.min(want, Math.floor(this.tokens)));
    this.tokens -= granted;
    return { granted, waitMs: granted > 0 ? 0 : this.waitMs() };
  }

  /** Returns 0 and consumes a token when one is available; else the ms until one will be. */
  take(): number {
    this.refill();
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return this.waitMs();
  }

  /** The ms until one token is there, when fewer than one is (at least 1). */
  private waitMs(): number {
    // Invariant: tokens < 1 here, so the wait is positive.
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

function checkedRate(opts: TokenBucketOptions): { perMs: number; burst: number } {
  if (!(opts.perSecond > 0) || !Number.isFinite(opts.perSecond)) {
    throw new RangeError(`perSecond must be a positive finite number, got ${opts.perSecond}`);
  }
  const burst = opts.burst ?? Math.max(1, opts.perSecond);
  if (!(burst >= 1) || !Number.isFinite(burst)) throw new RangeError(`burst must be >= 1, got ${burst}`);
  return { perMs: opts.perSecond / 1000, burst };
}
