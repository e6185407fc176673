/**
 * One process per SQLite data dir, held by the kernel: a small SQLite database `belfry.lock.db`
 * in the data dir, opened with locking_mode=EXCLUSIVE and written once (BEGIN EXCLUSIVE), so
 * this process keeps SQLite's exclusive file lock on it until it closes the connection. SQLite's
 * own locks keep belfry.db consistent, but two Belfry nodes on one file would each think they
 * own every shard; this lock makes the second one fail at start with a clear error.
 *
 * The lock is an fcntl record lock: the kernel drops it when the process dies, however it dies
 * (kill -9, OOM kill), before the process is reaped. So a restart right after a crash always
 * gets it, even while the dead process lingers as a zombie or when the new process has the old
 * one's pid (node as pid 1 in a container): no pid is compared. The file itself stays in the
 * data dir and is never deleted (deleting a lock file another process has open would let two
 * processes lock two different files of the same name).
 *
 * A second connection in the same process is refused too: SQLite tracks the locks of every
 * connection of a process to one file itself, since fcntl locks are per process.
 *
 * Not for network file systems whose fcntl locks are unreliable (NFS without a lock manager);
 * neither is SQLite's WAL.
 */
import { join } from 'node:path';
import { sqliteErrorCode } from '../sqlite-code.ts';
import { createPrivateFile } from './data-dir.ts';
import { openConnection } from './driver.ts';

export const LOCK_FILE_NAME = 'belfry.lock.db';

export interface DataDirLock {
  readonly path: string;
  /** Closes the lock's connection, which releases the lock. Idempotent. */
  release(): void;
}

/** Takes the lock of `dataDir` at once, or throws `data dir <dir> is in use by another process`. */
export function acquireDataDirLock(dataDir: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE_NAME);
  // Created 0600 here when new (SQLite would make it 0644 & ~umask); never opened here otherwise.
  createPrivateFile(path);
  // timeout 0: a held lock fails the first try, instead of waiting out the default 5 s.
  const db = openConnection(path, { timeoutMs: 0 });
  try {
    // No journal file beside the lock: the lock database never holds data worth a rollback.
    db.exec('PRAGMA journal_mode = MEMORY; PRAGMA locking_mode = EXCLUSIVE');
    // An exclusive transaction takes the EXCLUSIVE lock; in EXCLUSIVE locking mode the commit
    // keeps it until the connection closes.
    db.exec('BEGIN EXCLUSIVE; COMMIT');
  } catch (err) {
    db.close();
    if (sqliteErrorCode(err) === 'SQLITE_BUSY') {
      throw new Error(
        `data dir ${dataDir} is in use by another process (it holds the lock on ${path}); stop it first, or use another --data dir`,
      );
    }
    throw new Error(`data dir ${dataDir}: could not take the lock on ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      db.close();
    },
  };
}
