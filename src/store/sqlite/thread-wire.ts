/**
 * What crosses between the node's event loop and the SQLite store's thread (thread-store.ts):
 * calls in batches, replies in batches, and errors as plain data rebuilt into the classes callers
 * test for (BelfryError for the API, RangeError, StoreUnavailableError, and the driver's `code`,
 * which store/failure-kind.ts reads; SQLITE_FULL becomes StoreFullError). Everything else is
 * structured-cloned as it is.
 */
import { BelfryError, type ErrorCode, type ErrorDetail } from '../../core/errors.ts';
import { StoreFullError, StoreUnavailableError } from '../store.ts';
import type { SqliteStore } from './sqlite-store.ts';

export interface Call {
  id: number;
  method: string;
  args: unknown[];
}

/** The thread's own method: SqliteStore.eventInsertRows, which eventInsertMany calls with its events encoded. */
export const INSERT_ROWS = 'eventInsertRows' satisfies keyof SqliteStore;

export type Reply = { id: number; result: unknown } | { id: number; error: WireError };

export interface WireError {
  name: string;
  message: string;
  stack?: string;
  code?: unknown;
  details?: ErrorDetail[];
  headers?: Record<string, string>;
}

export function errorToWire(err: unknown): WireError {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  const e = err as Error & { code?: unknown; details?: ErrorDetail[]; headers?: Record<string, string> };
  return { name: e.name, message: e.message, stack: e.stack, code: e.code, details: e.details, headers: e.headers };
}

export function errorFromWire(w: WireError): Error {
  let err: Error;
  if (w.name === 'BelfryError') err = new BelfryError(w.code as ErrorCode, w.message, w.details, w.headers);
  else if (w.name === 'RangeError') err = new RangeError(w.message);
  else if (w.name === 'StoreUnavailableError') err = new StoreUnavailableError(w.message);
  // A full disk: the transaction rolled back; callers retry once there is room (answered 503).
  else if (w.name === 'StoreFullError' || w.code === 'SQLITE_FULL') err = Object.assign(new StoreFullError(`sqlite: ${w.message}`), { code: 'SQLITE_FULL' });
  else {
    err = new Error(w.message);
    err.name = w.name;
    if (w.code !== undefined) (err as Error & { code?: unknown }).code = w.code;
  }
  // The thread's stack says where it failed; the caller's own frames follow when it is rethrown.
  if (w.stack) err.stack = `${w.stack}\n    --- in the SQLite store thread, called from the event loop ---`;
  return err;
}
