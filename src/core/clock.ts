/**
 * Time seam. Production code never calls Date.now() or setTimeout() for decisions directly:
 * it asks a Clock, so tests can drive time deterministically with SimClock.
 */
export interface Clock {
  /** Wall-clock milliseconds since the epoch: due times and stored timestamps. May jump. */
  now(): number;
  /** Monotonic milliseconds: intervals, timeouts and lease math. Never goes back. */
  monotonicMs(): number;
  /** Resolves after `ms` of this clock's time; rejects with an AbortError when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `fn` once after `ms` of this clock's time; returns a cancel function. */
  setTimer(ms: number, fn: () => void): () => void;
}

function abortError(): Error {
  const err = new Error('aborted');
  err.name = 'AbortError';
  return err;
}

/**
 * A Clock's `sleep` from its `setTimer` (`arm` sets the timer and returns its cancel): resolves
 * when the timer runs, rejects with an AbortError when `signal` aborts first (the timer canceled).
 */
export function sleepOnTimer(arm: (fn: () => void) => () => void, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError());
    const cancel = arm(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    const onAbort = () => {
      cancel();
      reject(abortError());
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The real clock, with an optional fixed offset (for tests: nodes whose clocks disagree). */
export class SystemClock implements Clock {
  constructor(private readonly offsetMs = 0) {}
  now(): number {
    return Date.now() + this.offsetMs;
  }
  monotonicMs(): number {
    return performance.now();
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortError());
      const t = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      const onAbort = () => {
        clearTimeout(t);
        reject(abortError());
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
  setTimer(ms: number, fn: () => void): () => void {
    const t = setTimeout(fn, Math.max(0, ms));
    t.unref?.();
    return () => clearTimeout(t);
  }
}

/**
 * Wall time that advances with `base`'s monotonic time from one reading of its wall clock, taken
 * when made: a later step of the wall clock (NTP, a VM resume, an operator) moves nothing. For
 * the leases of a single node (pull visibility timeouts), whose every reader is this process: a
 * step forward must not end a consumer's claim early, nor a step back stretch it.
 */
export class SteadyClock implements Clock {
  private readonly wallMinusMonoMs: number;
  constructor(private readonly base: Clock) {
    this.wallMinusMonoMs = base.now() - base.monotonicMs();
  }
  now(): number {
    return Math.floor(this.base.monotonicMs() + this.wallMinusMonoMs);
  }
  monotonicMs(): number {
    return this.base.monotonicMs();
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.base.sleep(ms, signal);
  }
  setTimer(ms: number, fn: () => void): () => void {
    return this.base.setTimer(ms, fn);
  }
}

interface SimTimer {
  atMs: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that moves only when told. `advance` runs due timers in order; `jump` moves the wall
 * clock alone (also backwards), as NTP or a VM pause would, leaving monotonic time untouched.
 */
export class SimClock implements Clock {
  private wallMs: number;
  private monoMs = 0;
  private timers: SimTimer[] = [];
  private seq = 0;

  constructor(startWallMs = Date.UTC(2026, 0, 1)) {
    this.wallMs = startWallMs;
  }
  now(): number {
    return this.wallMs;
  }
  monotonicMs(): number {
    return this.monoMs;
  }
  setTimer(ms: number, fn: () => void): () => void {
    const timer: SimTimer = { atMs: this.monoMs + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOnTimer((fn) => this.setTimer(ms, fn), signal);
  }
  /** Moves both clocks forward by `ms`, running every timer that falls due, in order. */
  async advance(ms: number): Promise<void> {
    const targetMono = this.monoMs + ms;
    for (;;) {
      this.timers.sort((a, b) => a.atMs - b.atMs || a.seq - b.seq);
      const next = this.timers[0];
      if (!next || next.atMs > targetMono) break;
      this.timers.shift();
      this.wallMs += next.atMs - this.monoMs;
      this.monoMs = next.atMs;
      next.fn();
      await Promise.resolve();
    }
    this.wallMs += targetMono - this.monoMs;
    this.monoMs = targetMono;
  }
  /** Moves the wall clock alone, forwards or backwards. */
  jump(ms: number): void {
    this.wallMs += ms;
  }
}
