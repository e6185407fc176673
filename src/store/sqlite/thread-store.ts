/**
 * The SQLite store on a thread of its own: the node's event loop never runs SQL.
 *
 *   event loop (API, scheduler, dispatcher, HTTP)        SQLite thread (thread-store-worker.mjs)
 *     store.eventClaim(...) ──▶ calls of one tick, one message ──▶ SqliteStore: each call, in order
 *     promise resolved      ◀── replies of that batch, one message ◀──┘ (transactions, fsync, checkpoints)
 *
 * better-sqlite3 runs every statement to its end on the calling thread: on the event loop a claim
 * of 250 events, an outcome batch of 500 or a WAL checkpoint held every timer and every socket for
 * as long as it took (milliseconds each, tens at a flood's onset, about 40 % of the loop's busy
 * time while firing). Here they take the other core. The calls are the Store interface's, run by
 * the same SqliteStore class in the same order they were made, so every guarantee of that class
 * (one IMMEDIATE transaction per call, synchronous=FULL for acknowledged writes) holds unchanged.
 *
 * Bounds: at most CALLS_IN_FLIGHT_MAX calls wait for the thread at once (more are refused with
 * StoreUnavailableError, as a store that is down would be); a thread that dies fails every call
 * in flight and every later one (the node's health check then reports the store down).
 */
import { Worker } from 'node:worker_threads';
import { workerThread, type BusyThread } from '../../node/thread-busy.ts';
import { encodeInsertRows, insertResults, type InsertRowsResult } from './event-writes.ts';
import type { EventInsertManyParams, EventInsertResult, Store, StoreCapabilities } from '../store.ts';
import { StoreUnavailableError } from '../store.ts';
import type { IntegrityCheck } from './integrity-check.ts';
import type { SqliteStoreOptions } from './sqlite-store.ts';
import { errorFromWire, INSERT_ROWS, type Call, type Reply, type WireError } from './thread-wire.ts';

/** Calls sent to the thread and not yet answered, at most. */
export const CALLS_IN_FLIGHT_MAX = 100_000;
const START_MS_MAX = 60_000;

type Pending = { resolve(value: unknown): void; reject(err: Error): void };
type Ready = { ready: true; capabilities: StoreCapabilities; filePath: string; integrity: IntegrityCheck | null } | { ready: false; error: WireError };

/** The Store methods, forwarded as they are (all but `close`, which ends the thread too, and `eventInsertMany`, sent encoded). */
type Method = { [K in keyof Store]-?: Store[K] extends (...args: never[]) => Promise<unknown> ? K : never }[keyof Store];
const FORWARDED = {
  migrate: true, ping: true, apiKeyCreate: true, bulkJobClaim: true, bulkJobCreate: true, bulkJobFail: true, bulkJobGet: true, bulkJobStep: true, apiKeyFindByHash: true, apiKeyList: true, apiKeyRevoke: true,
  destinationDelete: true, destinationGet: true, destinationList: true, destinationPut: true, eventCancel: true,
  eventClaim: true, eventCountByState: true, eventCountByTenantState: true, eventCountPending: true,
  eventDeleteTerminal: true, eventForecast: true, eventGet: true, eventGroupHead: true, eventList: true,
  eventListDue: true, eventPullClaim: true, eventPullExpired: true, eventPullExtend: true, eventPullNextDue: true, eventPullSettle: true, eventRecordAttempts: true, eventReplay: true, claimLeaseRenew: true, eventRescue: true,
  eventRescueDead: true, eventUpdate: true, leaderAttemptElect: true, leaderGet: true, leaderResign: true,
  nodeDelete: true, nodeHeartbeat: true, nodeList: true, shardAssign: true, shardList: true, shardLag: true,
  tenantCreate: true, tenantGet: true, tenantList: true, tenantSecretsGet: true, tenantSecretsSwap: true,
  tenantUpdate: true, timeNow: true, transitionList: true,
  scheduleCreate: true, scheduleGet: true, scheduleList: true, scheduleUpdate: true, scheduleDelete: true,
  scheduleListDue: true, scheduleListCatchUp: true, scheduleCountsAdd: true, scheduleAdvance: true, scheduleAdvanceMany: true, scheduleOccurrenceList: true,
  sourcePut: true, sourceGet: true, sourceList: true, sourceListAll: true, sourceDelete: true, sourceReport: true,
} satisfies Record<Exclude<Method, 'close' | 'eventInsertMany'>, true>;

/** Opens the store of `opts.dataDir` on a new thread (lock, migrations there); resolves once it is open. */
export async function openSqliteThreadStore(opts: SqliteStoreOptions): Promise<SqliteThreadStore> {
  const worker = new Worker(new URL('./thread-store-worker.mjs', import.meta.url), { workerData: { options: opts } });
  const ready = await new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sqlite store thread did not open within ${START_MS_MAX} ms`)), START_MS_MAX);
    const done = (fn: () => void) => {
      clearTimeout(timer);
      worker.off('error', onError);
      worker.off('exit', onExit);
      fn();
    };
    const onError = (err: Error) => done(() => reject(err));
    const onExit = (code: number) => done(() => reject(new Error(`sqlite store thread exited while opening (code ${code})`)));
    worker.once('message', (msg: Ready) => done(() => resolve(msg)));
    worker.once('error', onError);
    worker.once('exit', onExit);
  }).catch(async (err: unknown) => {
    await worker.terminate();
    throw err;
  });
  if (!ready.ready) {
    await worker.terminate();
    throw errorFromWire(ready.error);
  }
  return new SqliteThreadStore(worker, ready.capabilities, ready.filePath, ready.integrity);
}

export interface SqliteThreadStore extends Omit<Store, 'capabilities' | 'close'> {}

export class SqliteThreadStore {
  private readonly pending = new Map<number, Pending>();
  /** Calls made this tick, sent together at its end. */
  private outbox: Call[] = [];
  private nextId = 1;
  /** Set once the thread is gone: every call fails with it. */
  private dead: Error | null = null;
  private closing: Promise<void> | null = null;
  /** Sees every error a call fails with (the node's storage watch: a full disk, a damaged file). */
  onCallError: ((err: Error) => void) | null = null;

  constructor(
    private readonly worker: Worker,
    readonly capabilities: StoreCapabilities,
    /** The database file. */
    readonly filePath: string,
    /** What the check of the file at open found (null when none was asked for). */
    readonly integrity: IntegrityCheck | null = null,
  ) {
    worker.on('message', (replies: Reply[]) => {
      for (const reply of replies) {
        const p = this.pending.get(reply.id);
        if (!p) continue;
        this.pending.delete(reply.id);
        if ('error' in reply) {
          const err = errorFromWire(reply.error);
          this.onCallError?.(err);
          p.reject(err);
        } else p.resolve(reply.result);
      }
    });
    worker.on('error', (err) => this.fail(new StoreUnavailableError(`sqlite store thread failed: ${err.message}`, { cause: err })));
    worker.on('exit', (code) => this.fail(new StoreUnavailableError(`sqlite store thread exited (code ${code})`)));
  }

  /** Queues one call for the thread; calls of one tick go in one message, run in the order made. */
  call<T>(method: string, args: unknown[]): Promise<T> {
    if (this.dead) return Promise.reject(this.dead);
    if (this.closing) return Promise.reject(new StoreUnavailableError('sqlite store: closed'));
    if (this.pending.size >= CALLS_IN_FLIGHT_MAX) {
      return Promise.reject(new StoreUnavailableError(`sqlite store thread: ${CALLS_IN_FLIGHT_MAX} calls already waiting`));
    }
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      if (this.outbox.length === 0) queueMicrotask(() => this.flush());
      this.outbox.push({ id, method, args });
    });
  }

  /** The store thread, for /metrics' busy time (its checkpointer and reader threads are its own). */
  busyThreads(): BusyThread[] {
    return [workerThread('sqlite-store', this.worker)];
  }

  /**
   * Inserts on the thread: the events go encoded (encodeInsertRows: flat bind values, cheaper to
   * clone and nothing left to compute there) and a created event comes back as its seq only; its
   * record is built here from the event sent, by the same function the store builds it with.
   */
  async eventInsertMany(params: EventInsertManyParams): Promise<EventInsertResult[]> {
    if (params.events.length === 0) return [];
    const done = await this.call<InsertRowsResult>(INSERT_ROWS, [encodeInsertRows(params.events), params.now]);
    return insertResults(params.events, done, params.now);
  }

  private flush(): void {
    const calls = this.outbox;
    this.outbox = [];
    if (calls.length > 0 && !this.dead) this.worker.postMessage(calls);
  }

  private fail(err: Error): void {
    if (this.dead) return;
    this.dead = err;
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }

  /** Closes the store on its thread (after every call made before), then ends the thread. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (!this.dead) {
        const id = this.nextId++;
        const closed = new Promise<void>((resolve, reject) => this.pending.set(id, { resolve: () => resolve(), reject }));
        this.outbox.push({ id, method: 'close', args: [] });
        this.flush();
        await closed.catch(() => {});
      }
      this.dead ??= new StoreUnavailableError('sqlite store: closed');
      await this.worker.terminate();
    })();
    return this.closing;
  }
}

for (const method of Object.keys(FORWARDED)) {
  Object.defineProperty(SqliteThreadStore.prototype, method, {
    value(this: SqliteThreadStore, ...args: unknown[]) {
      return this.call(method, args);
    },
    writable: true,
    configurable: true,
  });
}
