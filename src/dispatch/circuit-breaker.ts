/**
 * A circuit breaker per (tenant, destination): stop hammering an endpoint that keeps failing,
 * and find out cheaply when it is back.
 *
 *            failureThreshold consecutive failures
 *   closed ─────────────────────────────────────────▶ open ◀──────────────┐
 *     ▲                                                │                 │ probe failed:
 *     │ success                                        │ openMs elapsed  │ openMs doubles,
 *     │                                                ▼ (on check())    │ up to openMsMax
 *     └──────────────────── probe succeeded ───── half_open ─────────────┘
 *                                                 (exactly one probe passes;
 *                                                  every other check is refused)
 *
 * Invariants: at most one probe is in flight in half_open; the open duration resets to `openMs`
 * only on a success. A failure reported while open (a request that began before the circuit
 * opened) changes nothing. A probe whose result never arrives (its caller lost it) is presumed
 * failed after `probeMsMax`, so the breaker cannot stay half-open forever. All time is
 * monotonic: a wall-clock jump neither opens nor closes the circuit.
 */
import type { Clock } from '../core/clock.ts';

export const FAILURE_THRESHOLD_DEFAULT = 10;
export const OPEN_MS_DEFAULT = 1_000;
export const OPEN_MS_MAX_DEFAULT = 60_000;
export const PROBE_MS_MAX_DEFAULT = 60_000;

export type CircuitState = 'closed' | 'open' | 'half_open';

export interface CircuitBreakerOptions {
  /** Consecutive failures that open the circuit. Default 10. */
  failureThreshold?: number;
  /** First open duration. Default 1000 ms. */
  openMs?: number;
  /** Bound on the doubled open duration. Default 60000 ms. */
  openMsMax?: number;
  /** How long a probe may stay unanswered before another is let through. Default 60000 ms. */
  probeMsMax?: number;
}

export type CircuitCheck = { ok: true } | { ok: false; retryInMs: number };

/**
 * What the breaker would let through now, as check() would answer, without taking the probe:
 * `all` (closed), `probe` (one delivery: the open time has passed, or the probe in flight is
 * presumed lost) or `none`, for `inMs` more (then it may let a probe through).
 */
export type CircuitAdmits = { admits: 'all' } | { admits: 'probe' } | { admits: 'none'; inMs: number };

export class CircuitBreaker {
  private readonly failureThreshold: number;
  private readonly openMsMin: number;
  private readonly openMsMax: number;
  private readonly probeMsMax: number;
  private current: CircuitState = 'closed';
  private failuresConsecutive = 0;
  private openMsCurrent: number;
  private openedAtMs = 0;
  private probeStartedAtMs = 0;

  constructor(
    opts: CircuitBreakerOptions,
    private readonly clock: Clock,
  ) {
    this.failureThreshold = opts.failureThreshold ?? FAILURE_THRESHOLD_DEFAULT;
    this.openMsMin = opts.openMs ?? OPEN_MS_DEFAULT;
    this.openMsMax = Math.max(this.openMsMin, opts.openMsMax ?? OPEN_MS_MAX_DEFAULT);
    this.probeMsMax = opts.probeMsMax ?? PROBE_MS_MAX_DEFAULT;
    if (!Number.isInteger(this.failureThreshold) || this.failureThreshold < 1) {
      throw new RangeError(`failureThreshold must be a positive integer, got ${this.failureThreshold}`);
    }
    if (!(this.openMsMin > 0) || !(this.probeMsMax > 0)) throw new RangeError('openMs and probeMsMax must be > 0');
    this.openMsCurrent = this.openMsMin;
  }

  get state(): CircuitState {
    return this.current;
  }

  /** The open duration that applies now (doubles after each failed probe). */
  get openMs(): number {
    return this.openMsCurrent;
  }

  /**
   * May a delivery go now? In half_open the first caller gets the probe; it must report the
   * result with onSuccess() or onFailure().
   */
  check(): CircuitCheck {
    const nowMs = this.clock.monotonicMs();
    if (this.current === 'closed') return { ok: true };
    if (this.current === 'open') {
      const leftMs = this.openedAtMs + this.openMsCurrent - nowMs;
      if (leftMs > 0) return { ok: false, retryInMs: Math.ceil(leftMs) };
      this.current = 'half_open';
      this.probeStartedAtMs = nowMs;
      return { ok: true };
    }
    // half_open with a probe in flight.
    const probeLeftMs = this.probeStartedAtMs + this.probeMsMax - nowMs;
    if (probeLeftMs <= 0) {
      this.probeStartedAtMs = nowMs; // the lost probe is presumed failed; this caller probes
      return { ok: true };
    }
    // The probe's result will come sooner or later; ask again after the base open duration.
    return { ok: false, retryInMs: Math.ceil(Math.min(this.openMsMin, probeLeftMs)) };
  }

  /** What check() would let through now, without changing the state (see CircuitAdmits). */
  admits(): CircuitAdmits {
    if (this.current === 'closed') return { admits: 'all' };
    const nowMs = this.clock.monotonicMs();
    const leftMs =
      this.current === 'open'
        ? this.openedAtMs + this.openMsCurrent - nowMs
        : this.probeStartedAtMs + this.probeMsMax - nowMs;
    return leftMs > 0 ? { admits: 'none', inMs: Math.ceil(leftMs) } : { admits: 'probe' };
  }

  /** A delivery succeeded: the endpoint works. Closes and resets the open duration. */
  onSuccess(): void {
    this.current = 'closed';
    this.failuresConsecutive = 0;
    this.openMsCurrent = this.openMsMin;
  }

  /** A delivery failed in a way that counts against the endpoint (retryable failures). */
  onFailure(): void {
    const nowMs = this.clock.monotonicMs();
    if (this.current === 'closed') {
      this.failuresConsecutive++;
      if (this.failuresConsecutive >= this.failureThreshold) this.open(nowMs);
    } else if (this.current === 'half_open') {
      this.openMsCurrent = Math.min(this.openMsCurrent * 2, this.openMsMax);
      this.open(nowMs);
    }
    // open: a late failure of a request sent before the circuit opened; nothing to learn.
  }

  private open(nowMs: number): void {
    this.current = 'open';
    this.openedAtMs = nowMs;
    this.failuresConsecutive = 0;
  }
}
