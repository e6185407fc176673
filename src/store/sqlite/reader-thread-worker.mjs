// The worker side of reader-thread.ts: a read-only connection of its own on the store's file, on
// its own thread, so a long read (a count over millions of events) never blocks the node's event
// loop. Plain JavaScript: a worker does not inherit the TypeScript loader the CLI registers.
//
// workerData: { file, statements: { [name]: sql } }.
// Messages in: { id, name, params }; out: { id, rows } or { id, error }.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const db = new Database(workerData.file, { readonly: true, fileMustExist: true });
// A read waits for nothing in WAL mode but a checkpoint's brief lock on a fresh connection.
db.pragma('busy_timeout = 5000');
const prepared = new Map();

parentPort.on('message', ({ id, name, params }) => {
  try {
    let stmt = prepared.get(name);
    if (!stmt) {
      const sql = workerData.statements[name];
      if (typeof sql !== 'string') throw new Error(`reader thread: no statement named ${name}`);
      stmt = db.prepare(sql);
      prepared.set(name, stmt);
    }
    parentPort.postMessage({ id, rows: params === undefined ? stmt.all() : stmt.all(params) });
  } catch (err) {
    parentPort.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
});
