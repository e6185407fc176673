/**
 * The data dir holds the database (tenants' signing secrets, broker passwords in destinations),
 * the admin key and the lock: it is 0700 and every file in it 0600, whatever the umask the node
 * was started with. Modes are set explicitly: a file created with mode 0600 gets 0600 & ~umask,
 * which an odd umask (0o200) makes something else, and SQLite creates its files 0644 & ~umask.
 *
 * - New files: created here with 0600 before SQLite opens them (createPrivateFile). SQLite gives
 *   a database's -wal and -shm the database file's own mode, so they follow.
 * - Existing ones (an older version's 0644 files, a dir made by hand, a tmpfs mounted 1777):
 *   tightened at start by tightenDataDir, which says what it changed so the node can log it.
 *
 * It sits with the SQLite backend, whose files are most of the dir; the node's wiring uses it too,
 * for the dir itself and the admin key (on PostgreSQL as well).
 */
import { chmodSync, closeSync, fchmodSync, lstatSync, mkdirSync, openSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;
/** Entries of the data dir looked at, at most: it holds a handful; a dir of millions is not one. */
export const DATA_DIR_ENTRIES_MAX = 1_000;

/** Creates `dir` (and missing parents) if absent; a dir created here is exactly 0700. */
export function makePrivateDir(dir: string): void {
  const created = mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (created !== undefined) chmodSync(dir, PRIVATE_DIR_MODE);
}

/**
 * Creates `path` empty with mode 0600 if it does not exist; leaves an existing file alone. Never
 * opens an existing file: closing a descriptor of a file drops every fcntl lock this process holds
 * on it (SQLite's, the data-dir lock's), so only a file this call created is opened.
 */
export function createPrivateFile(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, 'wx', PRIVATE_FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw err;
  }
  try {
    fchmodSync(fd, PRIVATE_FILE_MODE);
  } finally {
    closeSync(fd);
  }
}

export interface Tightened {
  path: string;
  /** Octal, as `ls -l` would make it: "0755". */
  from: string;
  to: string;
}

export interface TightenResult {
  tightened: Tightened[];
  /** Entries whose mode could not be changed (another owner's), with the reason. */
  failed: { path: string; mode: string; error: string }[];
}

const octal = (mode: number): string => '0' + (mode & 0o7777).toString(8);

/**
 * Takes group and other permissions (and setuid/setgid/sticky bits) off `dir` and off every
 * entry directly in it (files and dirs; symlinks are left alone, their target is not ours to
 * change). Does not descend: the data dir has no subdirs of its own. Missing dir: nothing to do.
 */
export function tightenDataDir(dir: string): TightenResult {
  const result: TightenResult = { tightened: [], failed: [] };
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return result;
    throw err;
  }
  tighten(dir, result);
  for (const name of entries.slice(0, DATA_DIR_ENTRIES_MAX)) tighten(join(dir, name), result);
  return result;
}

function tighten(path: string, result: TightenResult): void {
  let mode: number;
  try {
    const st = lstatSync(path);
    if (st.isSymbolicLink()) return;
    mode = st.mode & 0o7777;
  } catch {
    return; // Gone meanwhile.
  }
  const wanted = mode & 0o700;
  if (wanted === mode) return;
  try {
    chmodSync(path, wanted);
    result.tightened.push({ path, from: octal(mode), to: octal(wanted) });
  } catch (err) {
    result.failed.push({ path, mode: octal(mode), error: (err as Error).message });
  }
}
