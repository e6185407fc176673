/**
 * What a failed store call means for whoever retries it, whatever the backend:
 * - `unavailable`: the store cannot be reached (StoreUnavailableError, or a connection-class
 *   error that did not pass through a backend's mapping), or its disk is full (nothing of the call
 *   was written); the same call works once it is back, or once space is freed.
 * - `retryable`: the call lost a race with another transaction or the server's own housekeeping
 *   (PostgreSQL serialization failure, deadlock, lock timeout, shutdown; SQLite busy or locked);
 *   the same call, made again, normally succeeds.
 * - `permanent`: anything else (a constraint, a bad value, a bug): the same call fails again.
 *
 * The codes are checked as strings on the error (pg's SQLSTATE `code`; SQLite's `SQLITE_*` name,
 * with extended codes such as SQLITE_BUSY_SNAPSHOT, read by sqlite-code.ts from either SQLite
 * driver's error), so no driver is imported.
 */
import { sqliteErrorCode } from './sqlite-code.ts';
import { StoreFullError, StoreUnavailableError } from './store.ts';

export type StoreFailureKind = 'unavailable' | 'retryable' | 'permanent';

/** PostgreSQL SQLSTATEs of a lost race or a server going away. */
const PG_RETRYABLE_CODES: ReadonlySet<string> = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available (lock_timeout)
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, in recovery)
  '53300', // too_many_connections
]);

/** SQLite primary result codes (extended ones are named `<primary>_<detail>`). */
const SQLITE_RETRYABLE_CODES: readonly string[] = ['SQLITE_BUSY', 'SQLITE_LOCKED'];

/** Driver codes of a full disk: SQLite's SQLITE_FULL, PostgreSQL's SQLSTATE 53100 disk_full. */
const FULL_CODES: ReadonlySet<string> = new Set(['SQLITE_FULL', '53100']);

/** The store refused a write for lack of disk space (mapped as StoreFullError, or a driver's own error). */
export function isStoreFull(err: unknown): boolean {
  if (err instanceof StoreFullError) return true;
  const code = driverCode(err);
  return code !== null && FULL_CODES.has(code);
}

/** The driver's code of `err`: SQLite's `SQLITE_*` name (either driver), else a string `code` (pg's SQLSTATE). */
function driverCode(err: unknown): string | null {
  const code = (err as { code?: unknown } | null)?.code;
  return sqliteErrorCode(err) ?? (typeof code === 'string' ? code : null);
}

export function storeFailureKind(err: unknown): StoreFailureKind {
  if (err instanceof StoreUnavailableError) return 'unavailable';
  const code = driverCode(err);
  if (code === null) return 'permanent';
  if (FULL_CODES.has(code)) return 'unavailable';
  if (code.startsWith('08')) return 'unavailable'; // connection_exception class
  if (PG_RETRYABLE_CODES.has(code)) return 'retryable';
  if (SQLITE_RETRYABLE_CODES.some((c) => code === c || code.startsWith(`${c}_`))) return 'retryable';
  return 'permanent';
}
