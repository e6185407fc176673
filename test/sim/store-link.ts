/**
 * A node's connection to the shared store: every call of the real store (SQLite on a file) goes
 * through the simulated network. The request travels (latency), the database runs it in its turn
 * (database.ts: one call at a time, each taking its time; by then the caller may be dead: the
 * call still commits), and the answer travels back
 * to the node (held while the node is paused, never delivered once it is dead).
 *
 * Faults, as the director sets them on a link:
 *   - latency: each way, a few ms, or hundreds while the link is slow;
 *   - errors before the call runs: connection refused (unavailable) or a lost race (retryable);
 *   - a lost answer: the call committed, the node hears a connection error;
 *   - a partition: `refuse` fails every call after the latency, `blackhole` holds every call (and
 *     the answers of calls in flight) until the partition heals, then fails them, as a TCP
 *     connection to a host that vanished does.
 */
import type { DueRef, DueWakeups, Store } from '../../src/store/store.ts';
import type { Database } from './database.ts';
import type { Actor, Prng, World } from './world.ts';

/** Errors as a driver reports them: classified by code (store/failure-kind.ts), whatever the tree. */
export function connectionError(message: string): Error {
  return Object.assign(new Error(`simulated: ${message}`), { code: '08006' });
}
function busyError(): Error {
  return Object.assign(new Error('simulated: database is locked'), { code: 'SQLITE_BUSY' });
}

/** What the observer sees of each call the database ran, at the moment it ran. */
export interface StoreObserver {
  /** `lost`: the node will not hear the answer (it hears a connection error instead). */
  executed(link: StoreLink, method: string, args: unknown[], result: unknown, lost: boolean, byClient: boolean): void;
  /** A call failed at the node (injected, or the store's own error), as the node hears it. */
  failed?(link: StoreLink, method: string, err: unknown): void;
}

/**
 * The store's notifications between nodes (PostgreSQL LISTEN/NOTIFY, Store.dueWakeups): an
 * announcement is a call like any other (latency, faults); once the database has it, every
 * subscribed node hears it after its own latency, unless it is cut off, dead or unsubscribed by
 * then (best effort, as NOTIFY to a dropped LISTEN connection is).
 */
export class WakeupHub {
  private readonly subscribers = new Set<{ link: StoreLink; listener: (refs: DueRef[]) => void }>();

  subscribe(link: StoreLink, listener: (refs: DueRef[]) => void): { close(): Promise<void> } {
    const entry = { link, listener };
    this.subscribers.add(entry);
    return { close: async () => void this.subscribers.delete(entry) };
  }

  publish(refs: DueRef[]): void {
    for (const s of this.subscribers) s.link.hear(() => s.listener(refs));
  }
}

/** Methods whose calls never cross the simulated network (the world's own setup and checks use the real store). */
const LOCAL = new Set(['close', 'migrate', 'constructor']);

export class StoreLink {
  /** Extra latency each way while the link is slow (0: normal). */
  slowMs = 0;
  partition: 'refuse' | 'blackhole' | null = null;
  /** Per call: fails before it runs (connection refused). */
  errorRate = 0;
  /** Per call: fails before it runs with a lost race (SQLITE_BUSY). */
  busyRate = 0;
  /** Per call: runs, then its answer is lost. */
  lostReplyRate = 0;
  /** Methods the lost-answer fault applies to (empty: all). */
  lostReplyMethods: Set<string> = new Set();
  /** Calls held by a black-hole partition: failed when it heals. */
  private held: (() => void)[] = [];
  readonly store: Store;
  calls = 0;

  constructor(
    private readonly world: World,
    private readonly rand: Prng,
    readonly real: Store,
    readonly actor: Actor,
    readonly label: string,
    private readonly observer: StoreObserver,
    hub: WakeupHub,
    /** The database: runs each call in its turn, taking its time (database.ts). */
    private readonly db: Database,
  ) {
    // dueWakeups: a flag of an older tree's (--src) StoreCapabilities; the current tree reads Store.dueWakeups.
    const capabilities = { ...real.capabilities, multiNode: true, dueWakeups: true };
    const wakeups: DueWakeups = {
      announce: async (refs) => void (await this.call('dueAnnounce', [refs], false, () => hub.publish(refs))),
      subscribe: async (listener) => hub.subscribe(this, listener),
    };
    this.store = new Proxy(real, {
      get: (target, prop, receiver) => {
        if (prop === 'capabilities') return capabilities;
        if (prop === 'dueWakeups') return wakeups;
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function' || typeof prop !== 'string' || LOCAL.has(prop)) return value;
        return (...args: unknown[]) => this.call(prop, args);
      },
    }) as Store;
  }

  private latency(): number {
    return this.rand.int(0, 3) + (this.slowMs > 0 ? this.rand.int(this.slowMs / 2, this.slowMs) : 0);
  }

  /** Ends a partition: calls a black hole held fail now (after the trip back). */
  heal(): void {
    this.partition = null;
    const held = this.held;
    this.held = [];
    for (const fail of held) fail();
  }

  private answer(fn: () => void): void {
    this.world.timer(this.actor, this.latency(), () => {
      if (this.partition === 'blackhole') this.held.push(fn);
      else fn();
    });
  }

  /** A notification reaches this node (after the trip), unless it is cut off (then it is lost). */
  hear(fn: () => void): void {
    if (this.actor.state === 'dead' || this.partition) return;
    this.world.timer(this.actor, this.latency(), () => {
      if (!this.partition) fn();
    });
  }

  /**
   * `byClient`: a client's request served by this node's API (not the node's own work). `run`:
   * what the database does with it, when it is not a method of the store (a notification).
   */
  call(method: string, args: unknown[], byClient = false, run?: () => unknown): Promise<unknown> {
    if (this.actor.state === 'dead') return new Promise(() => {});
    this.calls++;
    return new Promise((resolve, reject) => {
      const fail = (err: Error) => {
        this.observer.failed?.(this, method, err);
        reject(err);
      };
      if (this.partition === 'refuse')
        return this.answer(() => fail(connectionError(`${method}: connection refused (partitioned)`)));
      if (this.partition === 'blackhole') {
        this.held.push(() => this.answer(() => fail(connectionError(`${method}: connection lost (partition)`))));
        return;
      }
      if (this.errorRate > 0 && this.rand.chance(this.errorRate))
        return this.answer(() => fail(connectionError(`${method}: connection refused`)));
      if (this.busyRate > 0 && this.rand.chance(this.busyRate)) return this.answer(() => fail(busyError()));
      // The request's trip to the database; it runs there even if the node dies meanwhile.
      this.world.timer(null, this.latency(), () => {
        if (this.partition === 'blackhole') {
          this.held.push(() => this.answer(() => fail(connectionError(`${method}: connection lost (partition)`))));
          return;
        }
        if (this.partition === 'refuse')
          return this.answer(() => fail(connectionError(`${method}: connection reset (partitioned)`)));
        // In the database's queue: it runs in its turn, whatever happens to the link meanwhile.
        this.db.submit(method, args, () => this.execute(method, args, byClient, run, resolve, fail));
      });
    });
  }

  /** The call runs on the database: its answer (or error) travels back; the answer may be lost after the commit. */
  private execute(
    method: string,
    args: unknown[],
    byClient: boolean,
    run: (() => unknown) | undefined,
    resolve: (v: unknown) => void,
    fail: (err: Error) => void,
  ): void {
    let result: Promise<unknown>;
    try {
      result = Promise.resolve(
        run ? run() : (this.real as unknown as Record<string, (...a: unknown[]) => unknown>)[method](...args),
      );
    } catch (err) {
      result = Promise.reject(err);
    }
    result.then(
      (value) => {
        this.db.charge(value);
        const lost =
          this.lostReplyRate > 0 &&
          (this.lostReplyMethods.size === 0 || this.lostReplyMethods.has(method)) &&
          this.rand.chance(this.lostReplyRate);
        this.observer.executed(this, method, args, value, lost, byClient);
        if (lost) this.world.trace(`${this.label} ${method}: committed, answer lost`);
        this.answer(() => (lost ? fail(connectionError(`${method}: connection lost after commit`)) : resolve(value)));
      },
      (err: unknown) => this.answer(() => fail(err as Error)),
    );
  }
}
