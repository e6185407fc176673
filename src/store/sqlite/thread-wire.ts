/**
 * The protocol between the node's event loop and the SQLite store's thread (thread-store.ts,
 * thread-store-worker.ts), carried by core/thread-rpc.ts: `open` first, then the Store methods
 * forwarded as they are, INSERT_ROWS (eventInsertMany, encoded) and `close`. Errors cross as plain
 * data and are rebuilt into the classes callers test for (BelfryError for the API, RangeError,
 * StoreUnavailableError, and the driver's `code`, which store/failure-kind.ts reads; SQLITE_FULL
 * becomes StoreFullError). Everything else is structured-cloned as it is.
 */
import { errorFromWire as coreErrorFromWire, withWireStack, type WireError } from '../../core/thread-rpc.ts';
import { StoreFullError, StoreUnavailableError, type Store, type StoreCapabilities } from '../store.ts';
import type { InsertRowsResult } from './event-writes.ts';
import type { IntegrityCheck } from './integrity-check.ts';
import type { SqliteStore, SqliteStoreOptions } from './sqlite-store.ts';

/** The Store methods that return a promise: those a call can forward. */
export type StoreMethod = {
  [K in keyof Store]-?: Store[K] extends (...args: never[]) => Promise<unknown> ? K : never;
}[keyof Store];

/** The thread's own method: SqliteStore.eventInsertRows, which eventInsertMany calls with its events encoded. */
export const INSERT_ROWS = 'eventInsertRows' satisfies keyof SqliteStore;

/** What the thread says once its store is open. */
export interface Opened {
  capabilities: StoreCapabilities;
  filePath: string;
  integrity: IntegrityCheck | null;
}

export type StoreThreadProtocol = { [K in Exclude<StoreMethod, 'eventInsertMany'>]: Store[K] } & {
  /** Opens the store (lock, migrations, the check of the file); the first call. */
  open(options: SqliteStoreOptions): Opened;
  [INSERT_ROWS](rows: (string | number | null)[], now: number): InsertRowsResult;
};

const WHERE = 'the SQLite store thread';

export function errorFromWire(w: WireError): Error {
  let err: Error;
  if (w.name === 'StoreUnavailableError') err = new StoreUnavailableError(w.message);
  // A full disk: the transaction rolled back; callers retry once there is room (answered 503).
  else if (w.name === 'StoreFullError' || w.code === 'SQLITE_FULL')
    err = Object.assign(new StoreFullError(`sqlite: ${w.message}`), { code: 'SQLITE_FULL' });
  else return coreErrorFromWire(w, WHERE);
  return withWireStack(err, w, WHERE);
}
