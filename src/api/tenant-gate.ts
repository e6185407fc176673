/**
 * A bound per key (a tenant, or the admin) on calls of one kind in flight at once on this node,
 * with a short line of calls waiting behind them. What keeps one tenant's slow reads (forecasts)
 * from taking every connection or thread that reads have: another tenant's read goes ahead
 * beside them at once, rather than behind all of them. Past the line, the caller answers 429.
 *
 * Memory: an entry per key with calls in flight, dropped when its last call leaves; each holds at
 * most waitingMax waiters.
 */

interface KeyState {
  running: number;
  waiting: Array<() => void>;
}

export class TenantGate {
  private readonly keys = new Map<string, KeyState>();

  constructor(
    /** Calls of one key running at once. */
    readonly inFlightMax: number,
    /** Calls of one key waiting for room, at most; more are refused. */
    readonly waitingMax: number,
  ) {
    if (!Number.isInteger(inFlightMax) || inFlightMax < 1)
      throw new RangeError(`TenantGate: inFlightMax must be a positive integer, got ${inFlightMax}`);
    if (!Number.isInteger(waitingMax) || waitingMax < 0)
      throw new RangeError(`TenantGate: waitingMax must be a non-negative integer, got ${waitingMax}`);
  }

  /**
   * A turn for `key`: resolves with the function that ends it (call it once the work is done,
   * also when it failed) when `key` has room, at once or after the calls ahead of it. Null, at
   * once, when its line is full: the caller refuses the call.
   */
  enter(key: string): Promise<() => void> | null {
    let k = this.keys.get(key);
    if (!k) {
      k = { running: 0, waiting: [] };
      this.keys.set(key, k);
    }
    if (k.running < this.inFlightMax) {
      k.running += 1;
      return Promise.resolve(this.leaver(key, k));
    }
    if (k.waiting.length >= this.waitingMax) return null;
    const state = k;
    return new Promise((resolve) => state.waiting.push(() => resolve(this.leaver(key, state))));
  }

  /** Calls of `key` running and waiting (tests). */
  load(key: string): { running: number; waiting: number } {
    const k = this.keys.get(key);
    return { running: k?.running ?? 0, waiting: k?.waiting.length ?? 0 };
  }

  /** The end of one turn: the room passes to the next waiter, or is given back. Idempotent. */
  private leaver(key: string, k: KeyState): () => void {
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const next = k.waiting.shift();
      if (next) return next();
      k.running -= 1;
      if (k.running === 0 && this.keys.get(key) === k) this.keys.delete(key);
    };
  }
}
