// The child process of integrity-check.ts: runs PRAGMA quick_check on one SQLite file with a
// read-only connection and prints one JSON line. A process of its own, not a thread: a statement
// cannot be interrupted from JavaScript, and the parent bounds the check by killing this process.
// Plain JavaScript, no TypeScript loader: it starts in about 0.1 s.
//
// argv: <file> <problems shown at most>. stdout: {"ok":true} | {"ok":false,"problems":[...]} |
// {"error":"...","code":"..."} (the check could not run).
import Database from 'better-sqlite3';

const [file, shownMax] = process.argv.slice(2);
/** Codes by which SQLite says the file is not a sound database. */
const DAMAGE = /^SQLITE_(CORRUPT|NOTADB)/;

let out;
try {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const rows = db.pragma(`quick_check(${Number(shownMax)})`, { simple: false });
    const problems = rows.map((r) => String(r.quick_check));
    out = problems.length === 1 && problems[0] === 'ok' ? { ok: true } : { ok: false, problems };
  } finally {
    db.close();
  }
} catch (err) {
  const code = typeof err?.code === 'string' ? err.code : '';
  out = DAMAGE.test(code) ? { ok: false, problems: [`${code}: ${err.message}`] } : { error: String(err?.message ?? err), code };
}
process.stdout.write(JSON.stringify(out) + '\n');
