/**
 * The simulated world: one monotonic time for everything, the store's clock (the database host's,
 * which never steps), a wall clock per node (skewed and stepped by faults), and one queue of work.
 *
 * Everything that happens later is a timer of this world: a node's sleeps and timers, a store
 * call's trip to the database and back, a remote party's answer, a client's request, a fault.
 * Timers due at the same millisecond run in an order drawn from the seed. Between two timers the
 * world settles: every microtask and every setImmediate callback (patched into a queue of its own
 * while a run is on) runs until nothing is left, so a run depends on the seed alone, never on the
 * real machine's timing.
 *
 * Actors (nodes) can be paused (their timers are held until they resume, as a stopped process's
 * would be) or killed (their timers are dropped and never run again).
 */
import { sleepOnTimer, type Clock } from '../../src/core/clock.ts';

/** A small fast seeded generator (sfc32 seeded by splitmix32): the same seed, the same numbers. */
export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    let s = seed >>> 0;
    const split = () => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = split();
    this.b = split();
    this.c = split();
    this.d = split();
    for (let i = 0; i < 12; i++) this.next();
  }

  /** In [0, 1). */
  next(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t / 4294967296;
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  /** A generator of its own, drawn from this one (so adding draws to one part does not shift another's). */
  fork(): Prng {
    return new Prng(Math.floor(this.next() * 4294967296));
  }
}

/** Something whose timers the world runs: a node (paused, killed) or the world itself (null). */
export class Actor {
  state: 'up' | 'paused' | 'dead' = 'up';
  /** Timers that fell due while paused, in order. */
  held: Timer[] = [];
  constructor(readonly name: string) {}
}

interface Timer {
  at: number;
  tie: number;
  seq: number;
  fn: () => void;
  owner: Actor | null;
  canceled: boolean;
}

function before(x: Timer, y: Timer): boolean {
  return x.at < y.at || (x.at === y.at && (x.tie < y.tie || (x.tie === y.tie && x.seq < y.seq)));
}

/** A binary heap of timers by (at, tie, seq). */
class TimerHeap {
  private items: Timer[] = [];
  get size(): number {
    return this.items.length;
  }
  push(t: Timer): void {
    const a = this.items;
    a.push(t);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(a[i], a[p])) break;
      [a[i], a[p]] = [a[p], a[i]];
      i = p;
    }
  }
  peek(): Timer | undefined {
    return this.items[0];
  }
  pop(): Timer | undefined {
    const a = this.items;
    if (a.length === 0) return undefined;
    const top = a[0];
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && before(a[l], a[m])) m = l;
        if (r < a.length && before(a[r], a[m])) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m], a[i]];
        i = m;
      }
    }
    return top;
  }
}

/** Bounds that keep a run finite whatever the code under test does. */
export const SETTLE_ROUNDS_MAX = 100_000;
export const TIMERS_MAX = 2_000_000;

export class World {
  /** Monotonic milliseconds since the run began (shared by every node). */
  mono = 0;
  private readonly heap = new TimerHeap();
  private seq = 0;
  private immediates: (() => void)[] = [];
  /** Timers run so far (a bound on the run's work). */
  timersRun = 0;
  private readonly tieRand: Prng;
  private restore: (() => void) | null = null;
  /** Errors nothing caught (unhandled rejections, throws from timers): each is a finding. */
  readonly uncaught: string[] = [];

  constructor(
    readonly rand: Prng,
    /** The store's clock at mono 0. */
    readonly storeEpochMs: number,
    private readonly onTrace: (line: string) => void,
  ) {
    this.tieRand = rand.fork();
  }

  /** The database's clock: it never steps. */
  storeNow(): number {
    return this.storeEpochMs + this.mono;
  }

  trace(line: string): void {
    this.onTrace(line);
  }

  /** Runs `fn` after `ms` of monotonic time, unless `owner` is dead by then (held while it is paused). */
  timer(owner: Actor | null, ms: number, fn: () => void): () => void {
    if (owner?.state === 'dead') return () => {};
    const t: Timer = {
      at: this.mono + Math.max(0, Math.floor(ms)),
      tie: this.tieRand.next(),
      seq: this.seq++,
      fn,
      owner,
      canceled: false,
    };
    this.heap.push(t);
    return () => {
      t.canceled = true;
    };
  }

  /** Lets a paused actor's held timers run now, in the order they fell due. */
  resume(actor: Actor): void {
    if (actor.state !== 'paused') return;
    actor.state = 'up';
    const held = actor.held;
    actor.held = [];
    for (const t of held) {
      if (t.canceled) continue;
      this.heap.push({ ...t, at: this.mono, tie: -1, seq: this.seq++ });
    }
  }

  /**
   * Patches the process's setImmediate and Date.now for the run: the code under test yields with
   * setImmediate (a queue the world drains), and the SQLite store reads its clock with Date.now
   * (the store's clock: timeNow, which the nodes' StoreClocks calibrate against; the cluster
   * methods judge by the `now` each node passes, an older tree's by Date.now). Returns nothing;
   * `uninstall` puts them back.
   */
  install(): void {
    const realSetImmediate = globalThis.setImmediate;
    const realClearImmediate = globalThis.clearImmediate;
    const realDateNow = Date.now;
    const onRejection = (reason: unknown) => {
      this.uncaught.push(
        `unhandled rejection: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`,
      );
    };
    process.on('unhandledRejection', onRejection);
    const queue = (fn: (...args: unknown[]) => void, ...args: unknown[]) => {
      const entry = { canceled: false };
      this.immediates.push(() => {
        if (!entry.canceled) fn(...args);
      });
      return entry as unknown as NodeJS.Immediate;
    };
    (globalThis as { setImmediate: unknown }).setImmediate = queue;
    (globalThis as { clearImmediate: unknown }).clearImmediate = (entry: { canceled: boolean } | undefined) => {
      if (entry && typeof entry === 'object' && 'canceled' in entry) entry.canceled = true;
      else realClearImmediate(entry as unknown as NodeJS.Immediate);
    };
    Date.now = () => this.storeNow();
    this.realTurn = () => new Promise<void>((resolve) => realSetImmediate(resolve));
    this.restore = () => {
      // Whatever is still queued (the test runner's own callbacks, say) runs on the real loop.
      for (const fn of this.immediates.splice(0)) realSetImmediate(fn);
      (globalThis as { setImmediate: unknown }).setImmediate = realSetImmediate;
      (globalThis as { clearImmediate: unknown }).clearImmediate = realClearImmediate;
      Date.now = realDateNow;
      process.off('unhandledRejection', onRejection);
    };
  }

  uninstall(): void {
    this.restore?.();
    this.restore = null;
  }

  private realTurn: () => Promise<void> = () => new Promise<void>((resolve) => setImmediate(resolve));

  /** Runs every microtask and queued setImmediate callback until none is left. */
  async settle(): Promise<void> {
    for (let round = 0; ; round++) {
      await this.realTurn();
      if (this.immediates.length === 0) return;
      if (round >= SETTLE_ROUNDS_MAX)
        throw new Error(
          `the world never settled: ${this.immediates.length} callbacks still queued after ${round} rounds (a livelock)`,
        );
      const batch = this.immediates;
      this.immediates = [];
      for (const fn of batch) this.guard(fn);
    }
  }

  private guard(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.uncaught.push(`uncaught: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    }
  }

  /** When the next timer is due (Infinity: none). */
  nextAt(): number {
    return this.heap.peek()?.at ?? Infinity;
  }

  /** Runs timers in order up to `untilMono` (settling after each), then moves time there. */
  async runUntil(untilMono: number): Promise<void> {
    await this.settle();
    for (;;) {
      const t = this.heap.peek();
      if (!t || t.at > untilMono) break;
      this.heap.pop();
      if (t.canceled) continue;
      if (t.owner?.state === 'dead') continue;
      if (t.owner?.state === 'paused') {
        t.owner.held.push(t);
        continue;
      }
      if (++this.timersRun > TIMERS_MAX) throw new Error(`the run took more than ${TIMERS_MAX} timers`);
      this.mono = Math.max(this.mono, t.at);
      this.guard(t.fn);
      await this.settle();
    }
    this.mono = Math.max(this.mono, untilMono);
  }

  /** Runs until `done()` holds (checked after each timer's work) or `untilMono`; returns whether it held. */
  async runWhile(untilMono: number, done: () => boolean): Promise<boolean> {
    await this.settle();
    while (!done()) {
      const t = this.heap.peek();
      if (!t || t.at > untilMono) {
        this.mono = Math.max(this.mono, untilMono);
        return done();
      }
      await this.runUntil(t.at);
    }
    return true;
  }
}

/**
 * A node's clock: monotonic time is the world's; its wall clock is the store's plus a skew that
 * faults step (forward or back). Sleeps and timers are the node's: held while it is paused,
 * gone once it is dead.
 */
export class NodeClock implements Clock {
  constructor(
    private readonly world: World,
    private readonly actor: Actor,
    public skewMs: number,
  ) {}
  now(): number {
    return this.world.storeNow() + this.skewMs;
  }
  monotonicMs(): number {
    return this.world.mono;
  }
  setTimer(ms: number, fn: () => void): () => void {
    return this.world.timer(this.actor, ms, fn);
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOnTimer((fn) => this.world.timer(this.actor, ms, fn), signal);
  }
  /** A step of this node's wall clock (NTP, a VM resume, an operator). */
  step(ms: number): void {
    this.skewMs += ms;
  }
}
