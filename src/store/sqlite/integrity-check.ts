/**
 * The check of the database file at start: `PRAGMA quick_check` (every b-tree page read and its
 * structure checked, without matching indexes against their tables as integrity_check does), so a
 * damaged file stops the node at start with a clear message instead of being served as ready and
 * failing call by call.
 *
 * Bounded in time: the check runs in a child process (integrity-check-child.ts), killed at the
 * deadline, since a statement cannot be interrupted from JavaScript. Measured on this project's
 * VM (bench/measure-quick-check.ts), an 813 MB file of 2,000,000 events: 1.4-1.7 s with the file
 * in the page cache, 8.0-8.3 s from a cold cache (about 100 MB/s, the disk's read rate); integrity_check
 * took 13.6 s warm. The child's start (Node and the TypeScript loader) is about 0.5 s of that. The deadline,
 * QUICK_CHECK_MS_MAX, covers a file of about 2 GB read cold and 10 GB warm; a larger file whose
 * check does not finish in time is started without it (the caller logs a warning naming the file's
 * size): damage there is still refused call by call, as SQLite finds it (SQLITE_CORRUPT).
 */
import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { childProcessArgs } from '../../core/thread-rpc.ts';

/** The check's deadline at start (see above for what it covers). */
export const QUICK_CHECK_MS_MAX = 20_000;
/** Problems quick_check reports at most (it stops looking after as many). */
export const QUICK_CHECK_PROBLEMS_MAX = 5;

const CHILD = new URL('./integrity-check-child.ts', import.meta.url);

/** What the child prints: the check's verdict, or why it could not run. */
export type ChildOutput = { ok: true } | { ok: false; problems: string[] } | { error: string; code: string };

export type IntegrityCheck =
  /** quick_check found nothing wrong. */
  | { status: 'ok'; bytes: number; ms: number }
  /** No file yet, or an empty one (a new data dir): nothing to check. */
  | { status: 'new'; bytes: number; ms: 0 }
  /** The deadline passed first; the child was killed. */
  | { status: 'timed_out'; bytes: number; ms: number }
  /** The check itself could not run (the child failed to start or to open the file for a reason other than damage). */
  | { status: 'not_run'; bytes: number; ms: number; error: string };

/** The database file is damaged: the node refuses to start on it. */
export class DamagedDatabaseError extends Error {
  override name = 'DamagedDatabaseError';
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(
      `the database file ${file} is damaged (PRAGMA quick_check: ${problems.join('; ')}); Belfry will not start on it. ` +
        `Restore the data dir from a backup, or copy out what is readable with: sqlite3 ${file} .recover | sqlite3 recovered.db`,
    );
  }
}

/** SQLite's codes for a file that is not a sound database, wherever they come from. */
export function isDamageCode(code: unknown): boolean {
  return typeof code === 'string' && /^SQLITE_(CORRUPT|NOTADB)/.test(code);
}

/**
 * Runs quick_check on `file` for at most `deadlineMs`; throws DamagedDatabaseError when it finds
 * damage. Read-only: it writes nothing, not even a checkpoint.
 */
export async function checkIntegrity(file: string, deadlineMs: number): Promise<IntegrityCheck> {
  let bytes = 0;
  try {
    bytes = statSync(file).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (bytes === 0) return { status: 'new', bytes, ms: 0 };
  const startMs = performance.now();
  const ms = () => Math.round(performance.now() - startMs);
  const run = await new Promise<{ stdout: string; error: (Error & { killed?: boolean }) | null }>((resolve) => {
    execFile(
      process.execPath,
      childProcessArgs(CHILD, [file, String(QUICK_CHECK_PROBLEMS_MAX)]),
      { timeout: deadlineMs, killSignal: 'SIGKILL', maxBuffer: 1024 * 1024, windowsHide: true },
      (error, stdout) => resolve({ stdout, error }),
    );
  });
  if (run.error?.killed) return { status: 'timed_out', bytes, ms: ms() };
  let out: { ok?: boolean; problems?: string[]; error?: string; code?: string };
  try {
    out = JSON.parse(run.stdout);
  } catch {
    return {
      status: 'not_run',
      bytes,
      ms: ms(),
      error: run.error?.message ?? `unexpected output: ${run.stdout.slice(0, 200)}`,
    };
  }
  if (out.ok === true) return { status: 'ok', bytes, ms: ms() };
  if (out.ok === false)
    throw new DamagedDatabaseError(
      file,
      (out.problems ?? []).map((p) => p.replace(/\s*\n\s*/g, ' ')),
    );
  return { status: 'not_run', bytes, ms: ms(), error: `${out.code ?? ''} ${out.error ?? ''}`.trim() };
}
