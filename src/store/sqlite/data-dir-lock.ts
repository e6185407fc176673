/**
 * One process per SQLite data dir: a `belfry.lock` file created exclusively (as open 'wx' would)
 * holding the owner's pid. SQLite's own locks keep the file consistent, but two Belfry nodes on
 * one file would each think they own every shard; this lock makes the second one fail at start
 * with a clear error.
 *
 * A lock left by a dead process (kill -9) is taken over. A live pid, including our own (the same
 * process opening the dir twice), keeps it.
 */
import { linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const LOCK_FILE_NAME = 'belfry.lock';

/** Takeover attempts before giving up: two starters racing for a stale lock settle within this. */
const ACQUIRE_ATTEMPTS_MAX = 5;

export interface DataDirLock {
  readonly path: string;
  /** Removes the lock file if it is still ours. Idempotent. */
  release(): void;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readPid(path: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8').trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Takes the lock of `dataDir` or throws `data dir <dir> is in use by pid N`. */
export function acquireDataDirLock(dataDir: string): DataDirLock {
  const path = join(dataDir, LOCK_FILE_NAME);
  // The pid is written to a private file first and hard-linked into place: link() fails with
  // EEXIST like open('wx'), and the lock file never exists without its pid in it.
  const tmpPath = `${path}.${process.pid}.tmp`;
  writeFileSync(tmpPath, `${process.pid}\n`, { flag: 'w' });
  try {
    for (let attempt = 0; attempt < ACQUIRE_ATTEMPTS_MAX; attempt++) {
      try {
        linkSync(tmpPath, path);
        return makeLock(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const pid = readPid(path);
      if (pid !== null && pidAlive(pid)) {
        throw new Error(`data dir ${dataDir} is in use by pid ${pid} (lock file ${path})`);
      }
      // The owner died without releasing (kill -9): take over. Two starters racing for the same
      // stale lock at the same instant could both win; a supervisor restarts one node, not two.
      removeIfPresent(path);
    }
    throw new Error(`data dir ${dataDir}: could not take the lock file ${path} after ${ACQUIRE_ATTEMPTS_MAX} attempts`);
  } finally {
    removeIfPresent(tmpPath);
  }
}

function removeIfPresent(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

function makeLock(path: string): DataDirLock {
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      if (readPid(path) === process.pid) removeIfPresent(path);
    },
  };
}
