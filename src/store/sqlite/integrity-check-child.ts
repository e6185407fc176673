/**
 * The child process of integrity-check.ts: runs PRAGMA quick_check on one SQLite file with a
 * read-only connection and prints one JSON line. A process of its own, not a thread: a statement
 * cannot be interrupted from JavaScript, and the parent bounds the check by killing this process.
 *
 * argv: <file> <problems shown at most>. stdout: one ChildOutput as JSON.
 */
import { sqliteErrorCode } from '../sqlite-code.ts';
import { openConnection } from './driver.ts';
import type { ChildOutput } from './integrity-check.ts';

const [file, shownMax] = process.argv.slice(2);
/** Codes by which SQLite says the file is not a sound database. */
const DAMAGE = /^SQLITE_(CORRUPT|NOTADB)/;

let out: ChildOutput;
try {
  const db = openConnection(file, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare<{ quick_check: unknown }>(`PRAGMA quick_check(${Number(shownMax)})`).all();
    const problems = rows.map((r) => String(r.quick_check));
    out = problems.length === 1 && problems[0] === 'ok' ? { ok: true } : { ok: false, problems };
  } finally {
    db.close();
  }
} catch (err) {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = sqliteErrorCode(err) ?? (typeof e?.code === 'string' ? e.code : '');
  out = DAMAGE.test(code)
    ? { ok: false, problems: [`${code}: ${e?.message}`] }
    : { error: String(e?.message ?? err), code };
}
process.stdout.write(`${JSON.stringify(out)}\n`);
