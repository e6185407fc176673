/**
 * Parked pull claims (long polls): a claim that finds nothing due waits here, for at most its
 * `wait`, until something may be claimable in its queue: an event of the queue was written or
 * settled through this node (`wake`), the queue's next event falls due (the caller sleeps until
 * then), or a bounded fallback poll (`pollMs`) passes, which also finds what other nodes wrote.
 *
 * Bounds: at most `parkedPerTenantMax` parked claims per tenant and `parkedMax` per node (over
 * them a claim is refused with 429 at once, so a tenant cannot hold the node's sockets); each
 * parked claim reads the store at most once per wake-up, wake-up or poll.
 */
import type { Clock } from '../core/clock.ts';
import { BelfryError } from '../core/errors.ts';
import { FIREABLE_STATES, type EventRecord } from '../core/event.ts';
import { queueKeyOf } from '../core/queue.ts';

export interface PullWaitersOptions {
  /** Parked claims per tenant, at most. */
  parkedPerTenantMax: number;
  /** Parked claims on this node, at most. */
  parkedMax: number;
  /** A parked claim looks again at least this often (ms), woken or not. */
  pollMs: number;
}

export const DEFAULT_PULL_WAITERS_OPTIONS: PullWaitersOptions = {
  parkedPerTenantMax: 100,
  parkedMax: 1_000,
  pollMs: 1_000,
};

/** One parked claim's registration: held for its whole long poll, so no wake-up between two looks is lost. */
export interface PullWatch {
  /**
   * Sleeps up to `ms` (capped at pollMs), or until its queue is woken, `signal` aborts or the
   * waiters close; returns at once when the queue was woken since the last sleep.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  release(): void;
}

class Watch implements PullWatch {
  woken = false;
  private done: (() => void) | null = null;

  constructor(
    private readonly waiters: PullWaiters,
    private readonly clock: Clock,
    private readonly pollMs: number,
    private readonly onRelease: () => void,
  ) {}

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.woken || this.waiters.isClosed || signal?.aborted) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const finish = () => {
        cancel();
        signal?.removeEventListener('abort', finish);
        this.done = null;
        this.woken = false;
        resolve();
      };
      const cancel = this.clock.setTimer(Math.max(0, Math.min(ms, this.pollMs)), finish);
      this.done = finish;
      signal?.addEventListener('abort', finish, { once: true });
    });
  }

  /** Its queue has news. */
  wake(): void {
    this.woken = true;
    this.done?.();
  }

  get sleeping(): boolean {
    return this.done !== null;
  }

  release(): void {
    this.done?.();
    this.onRelease();
  }
}

export class PullWaiters {
  readonly opts: PullWaitersOptions;
  private readonly perTenant = new Map<string, number>();
  private parked = 0;
  /** Per queue key, the claims parked on it. */
  private readonly watches = new Map<string, Set<Watch>>();
  private closed = false;

  constructor(
    private readonly clock: Clock,
    opts: Partial<PullWaitersOptions> = {},
  ) {
    this.opts = { ...DEFAULT_PULL_WAITERS_OPTIONS, ...opts };
  }

  /** Closed (the node is stopping): parked claims answer with what they have. */
  get isClosed(): boolean {
    return this.closed;
  }

  get parkedCount(): number {
    return this.parked;
  }

  /** Claims sleeping now (parked and between two looks at the store). */
  get sleepingCount(): number {
    let n = 0;
    for (const set of this.watches.values()) for (const w of set) if (w.sleeping) n += 1;
    return n;
  }

  /** Parks a long poll of `tenantId` on `queue` until released. 429 when over a bound. */
  enter(tenantId: string, queue: string): PullWatch {
    const mine = this.perTenant.get(tenantId) ?? 0;
    if (mine >= this.opts.parkedPerTenantMax || this.parked >= this.opts.parkedMax) {
      throw new BelfryError(
        'rate_limited',
        `too many claims waiting (at most ${this.opts.parkedPerTenantMax} per tenant and ${this.opts.parkedMax} per node); claim with a shorter wait or fewer consumers`,
        [{ field: 'wait', message: 'too many parked claims' }],
      );
    }
    this.perTenant.set(tenantId, mine + 1);
    this.parked += 1;
    const key = queueKeyOf(tenantId, queue);
    let released = false;
    const watch: Watch = new Watch(this, this.clock, this.opts.pollMs, () => {
      if (released) return;
      released = true;
      this.parked -= 1;
      const left = (this.perTenant.get(tenantId) ?? 1) - 1;
      if (left <= 0) this.perTenant.delete(tenantId);
      else this.perTenant.set(tenantId, left);
      const set = this.watches.get(key);
      set?.delete(watch);
      if (set?.size === 0) this.watches.delete(key);
    });
    let set = this.watches.get(key);
    if (!set) this.watches.set(key, (set = new Set()));
    set.add(watch);
    return watch;
  }

  /** Something in this queue may be claimable now: every claim parked on it looks again. */
  wake(tenantId: string, queue: string): void {
    const set = this.watches.get(queueKeyOf(tenantId, queue));
    if (set) for (const w of set) w.wake();
  }

  /** Events written or settled: wakes the queues of the fireable ones (and, for a group, its next event's). */
  wakeEvents(events: EventRecord[]): void {
    if (this.watches.size === 0) return;
    for (const e of events) {
      if (FIREABLE_STATES.includes(e.state) || e.group !== null) this.wake(e.tenantId, e.queue);
    }
  }

  /** Shutdown: every parked claim answers now (with what it has). */
  close(): void {
    this.closed = true;
    for (const set of [...this.watches.values()]) for (const w of [...set]) w.wake();
  }
}
