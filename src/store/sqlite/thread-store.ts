/**
 * The SQLite store on a thread of its own: the node's event loop never runs SQL.
 *
 *   event loop (API, scheduler, dispatcher, HTTP)        SQLite thread (thread-store-worker.ts)
 *     store.eventClaim(...) ──▶ calls of one tick, one message ──▶ SqliteStore: each call, in order
 *     promise resolved      ◀── replies of that batch, one message ◀──┘ (transactions, fsync, checkpoints)
 *
 * The driver (node:sqlite) runs every statement to its end on the calling thread: on the event loop a claim
 * of 250 events, an outcome batch of 500 or a WAL checkpoint held every timer and every socket for
 * as long as it took (milliseconds each, tens at a flood's onset, about 40 % of the loop's busy
 * time while firing). Here they take the other core. The calls are the Store interface's, run by
 * the same SqliteStore class in the same order they were made, so every guarantee of that class
 * (one IMMEDIATE transaction per call, synchronous=FULL for acknowledged writes) holds unchanged.
 *
 * Bounds: at most CALLS_IN_FLIGHT_MAX calls wait for the thread at once (more are refused with
 * StoreUnavailableError, as a store that is down would be); a thread that dies fails every call
 * in flight and every later one (the node's health check then reports the store down). The calls
 * cross by core/thread-rpc.ts; their protocol is StoreThreadProtocol (thread-wire.ts).
 */
import { RpcClient, startWorker, type Death } from '../../core/thread-rpc.ts';
import { workerThread, type BusyThread } from '../../core/thread-busy.ts';
import { composeStore, forwardParts } from '../core/compose.ts';
import {
  StoreUnavailableError,
  type EventInsertManyParams,
  type EventInsertResult,
  type StoreCapabilities,
  type StorePartMethods,
} from '../store.ts';
import { encodeInsertRows, insertResults } from './event-writes.ts';
import type { IntegrityCheck } from './integrity-check.ts';
import type { SqliteStoreOptions } from './sqlite-store.ts';
import { errorFromWire, INSERT_ROWS, type StoreThreadProtocol } from './thread-wire.ts';

/** Calls sent to the thread and not yet answered, at most. */
export const CALLS_IN_FLIGHT_MAX = 100_000;
const START_MS_MAX = 60_000;

/** The error every call fails with once the thread is gone (while it opens: what stopped it opening). */
const dead =
  (opening: () => boolean) =>
  (why: Death): Error => {
    if ('exitCode' in why)
      return opening()
        ? new Error(`sqlite store thread exited while opening (code ${why.exitCode})`)
        : new StoreUnavailableError(`sqlite store thread exited (code ${why.exitCode})`);
    if ('error' in why)
      return opening()
        ? why.error
        : new StoreUnavailableError(`sqlite store thread failed: ${why.error.message}`, { cause: why.error });
    return new StoreUnavailableError('sqlite store: closed');
  };

/** Opens the store of `opts.dataDir` on a new thread (lock, migrations there); resolves once it is open. */
export async function openSqliteThreadStore(opts: SqliteStoreOptions): Promise<SqliteThreadStore> {
  let opening = true;
  const rpc = new RpcClient<StoreThreadProtocol>(startWorker(new URL('./thread-store-worker.ts', import.meta.url)), {
    inFlightMax: CALLS_IN_FLIGHT_MAX,
    overloaded: () => new StoreUnavailableError(`sqlite store thread: ${CALLS_IN_FLIGHT_MAX} calls already waiting`),
    dead: dead(() => opening),
    rebuildError: errorFromWire,
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    const opened = await Promise.race([
      rpc.call('open', opts),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`sqlite store thread did not open within ${START_MS_MAX} ms`)),
          START_MS_MAX,
        );
      }),
    ]);
    opening = false;
    return threadStore(new StoreThread(rpc, opened.capabilities, opened.filePath, opened.integrity));
  } catch (err) {
    await rpc.terminate();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** The store on its thread: the thread's link, with every method of every part. */
export type SqliteThreadStore = StoreThread & StorePartMethods;

/**
 * Every method of every part sent to the thread as a call of its name (forwardParts, by the lists
 * of core/compose.ts), but eventInsertMany, whose events go encoded.
 */
function threadStore(thread: StoreThread): SqliteThreadStore {
  const parts = forwardParts((method, args) => thread.call(method, args));
  return composeStore(thread, {
    ...parts,
    events: { ...parts.events, eventInsertMany: (params) => thread.insertMany(params) },
  });
}

/** The link to the store's thread: calls out, replies back; the store's lifecycle. */
export class StoreThread {
  private closing: Promise<void> | null = null;

  constructor(
    private readonly rpc: RpcClient<StoreThreadProtocol>,
    readonly capabilities: StoreCapabilities,
    /** The database file. */
    readonly filePath: string,
    /** What the check of the file at open found (null when none was asked for). */
    readonly integrity: IntegrityCheck | null = null,
  ) {}

  /** Sees every error a call fails with (the node's storage watch: a full disk, a damaged file). */
  get onCallError(): ((err: Error) => void) | null {
    return this.rpc.onCallError;
  }

  set onCallError(fn: ((err: Error) => void) | null) {
    this.rpc.onCallError = fn;
  }

  /** Queues one call for the thread; calls of one tick go in one message, run in the order made. */
  call<T>(method: string, args: unknown[]): Promise<T> {
    if (this.closing) return Promise.reject(this.rpc.dead ?? new StoreUnavailableError('sqlite store: closed'));
    return this.rpc.send(method, args) as Promise<T>;
  }

  migrate(): Promise<void> {
    return this.call('migrate', []);
  }

  ping(): Promise<void> {
    return this.call('ping', []);
  }

  /** The store thread, for /metrics' busy time (its checkpointer and reader threads are its own). */
  busyThreads(): BusyThread[] {
    return [workerThread('sqlite-store', this.rpc.worker)];
  }

  /**
   * eventInsertMany on the thread: the events go encoded (encodeInsertRows: flat bind values, cheaper to
   * clone and nothing left to compute there) and a created event comes back as its seq only; its
   * record is built here from the event sent, by the same function the store builds it with.
   */
  async insertMany(params: EventInsertManyParams): Promise<EventInsertResult[]> {
    if (params.events.length === 0) return [];
    if (this.closing) throw this.rpc.dead ?? new StoreUnavailableError('sqlite store: closed');
    const done = await this.rpc.call(INSERT_ROWS, encodeInsertRows(params.events), params.now);
    return insertResults(params.events, done, params.now);
  }

  /** Closes the store on its thread (after every call made before), then ends the thread. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      if (!this.rpc.dead) await this.rpc.call('close').catch(() => {});
      await this.rpc.terminate();
    })();
    return this.closing;
  }
}
