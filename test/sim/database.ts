/**
 * The database's time: one server that runs the calls of every node one at a time, first come
 * first served, each taking simulated time by a cost model. Without it a store call cost only its
 * network trip and the database ran any number of calls at once, so work that competes for the
 * database (one tenant's catch-up against another's on-time occurrences, a bulk job against
 * claims) could never delay anything in a run, however much of it there was.
 *
 *   node ──trip──▶ queue (FIFO) ──service: costMs(call)──▶ runs, commits ──trip──▶ node
 *
 * The model (what a write transaction with its fsync and a read of an index cost on a small
 * SQLite or PostgreSQL server; the figures are rough on purpose, what matters is that work costs
 * time and that calls queue):
 *   read   READ_MS + ROW_MS per row read
 *   write  WRITE_MS + ROW_MS per row written or read
 * Rows are counted from the call's arguments (events inserted, refs claimed, advances, deltas)
 * and from its answer (rows returned); the answer's rows are charged after it ran, so they delay
 * the calls behind it. Deterministic: costs depend on the calls alone.
 */
import type { World } from './world.ts';

/** Simulated milliseconds: one call's fixed cost, read or write, and each row's. */
export const DB_COST = { readMs: 0.05, writeMs: 0.25, rowMs: 0.01 };

/** Methods that only read (the rest write: a transaction with a commit). */
const READ_VERB = /(?:Get|List\w*|Count\w*|FindByHash|Forecast|GroupHead|PullNextDue|Lag)$|^timeNow$|^ping$/;

export function isReadCall(method: string): boolean {
  return READ_VERB.test(method);
}

/** Rows in a value: the length of an array, or of the arrays a params object carries. */
export function rowsOf(value: unknown): number {
  if (Array.isArray(value)) return value.length;
  if (value === null || typeof value !== 'object') return 0;
  let n = 0;
  for (const v of Object.values(value as Record<string, unknown>)) if (Array.isArray(v)) n += v.length;
  return n;
}

interface Queued {
  endMs: number;
  run: () => void;
}

export class Database {
  /** When the server is free (fractional simulated ms). */
  private freeAtMs = 0;
  private readonly queue: Queued[] = [];
  private armed = false;
  /** Simulated ms the server spent on calls, and the calls it ran (for the run's summary). */
  busyMs = 0;
  calls = 0;
  /** The longest a call waited in the queue before its service began. */
  queuedMsMax = 0;

  constructor(
    private readonly world: World,
    /** false: every call runs as it arrives, in no time (the model before costs). */
    readonly costs: boolean,
  ) {}

  /** Runs `run` once the calls ahead of it are done and its own service time has passed. */
  submit(method: string, args: unknown[], run: () => void): void {
    this.calls++;
    if (!this.costs) return run();
    const nowMs = this.world.mono;
    const startMs = Math.max(nowMs, this.freeAtMs);
    this.queuedMsMax = Math.max(this.queuedMsMax, startMs - nowMs);
    const costMs =
      (isReadCall(method) ? DB_COST.readMs : DB_COST.writeMs) +
      DB_COST.rowMs * args.reduce<number>((n, a) => n + rowsOf(a), 0);
    this.freeAtMs = startMs + costMs;
    this.busyMs += costMs;
    this.queue.push({ endMs: this.freeAtMs, run });
    this.arm();
  }

  /** The rows of an answer, charged to the server after the call ran: the calls queued behind it end later. */
  charge(result: unknown): void {
    const costMs = this.costs ? DB_COST.rowMs * rowsOf(result) : 0;
    if (costMs === 0) return;
    this.freeAtMs = Math.max(this.freeAtMs, this.world.mono) + costMs;
    this.busyMs += costMs;
    for (const q of this.queue) q.endMs += costMs;
  }

  /** A timer for the call at the head of the queue (one at a time; a head moved later by a charge re-arms it). */
  private arm(): void {
    if (this.armed || this.queue.length === 0) return;
    this.armed = true;
    this.world.timer(null, Math.ceil(this.queue[0].endMs) - this.world.mono, () => {
      this.armed = false;
      while (this.queue.length > 0 && this.queue[0].endMs <= this.world.mono) this.queue.shift()!.run();
      this.arm();
    });
  }
}
