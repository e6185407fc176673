// The worker side of checkpointer.ts: a connection of its own on the store's file that copies the
// WAL back into the database (PRAGMA wal_checkpoint(PASSIVE)) every intervalMs, so the store's
// writer never does it inside a commit. Plain JavaScript: a worker does not inherit the
// TypeScript loader the CLI registers.
//
// workerData: { file, intervalMs }. Messages out: { log, checkpointed, busy, ms } after each pass
// that copied frames.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const db = new Database(workerData.file, { fileMustExist: true });
// Prepared once and kept: a statement left to the garbage collector aborts the process with
// better-sqlite3 12 built against Node >= 24.19 (see queries.ts).
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
let last = -1;

setInterval(() => {
  const startMs = performance.now();
  let pass;
  try {
    // PASSIVE: copies what no reader still needs, never waits for a lock, never blocks the writer.
    pass = checkpoint.get();
  } catch {
    // A full disk (the database file cannot grow) or an I/O error: the frames stay in the WAL,
    // where every reader finds them; the next pass tries again, so the WAL shrinks back once
    // there is room.
    return;
  }
  const { busy, log, checkpointed } = pass;
  if (checkpointed !== last) {
    last = checkpointed;
    parentPort.postMessage({ log, checkpointed, busy, ms: performance.now() - startMs });
  }
}, workerData.intervalMs);
