/**
 * The worker side of checkpointer.ts: a connection of its own on the store's file that copies the
 * WAL back into the database (PRAGMA wal_checkpoint(PASSIVE)) every intervalMs, so the store's
 * writer never does it inside a commit. Protocol: CheckpointerProtocol (checkpointer.ts), by
 * core/thread-rpc.ts.
 */
import { serveRpc } from '../../core/thread-rpc.ts';
import type { CheckpointerProtocol, CheckpointPass } from './checkpointer.ts';
import { openConnection } from './driver.ts';

let lastPass: CheckpointPass | null = null;
let passes = 0;

function start(file: string, intervalMs: number): void {
  const db = openConnection(file, { fileMustExist: true });
  // Prepared once and kept: it runs every intervalMs.
  const checkpoint = db.prepare<{ busy: number; log: number; checkpointed: number }>('PRAGMA wal_checkpoint(PASSIVE)');
  let last = -1;
  setInterval(() => {
    const startMs = performance.now();
    let pass: { busy: number; log: number; checkpointed: number } | undefined;
    try {
      // PASSIVE: copies what no reader still needs, never waits for a lock, never blocks the writer.
      pass = checkpoint.get();
    } catch {
      // A full disk (the database file cannot grow) or an I/O error: the frames stay in the WAL,
      // where every reader finds them; the next pass tries again, so the WAL shrinks back once
      // there is room.
      return;
    }
    if (!pass) return;
    const { busy, log, checkpointed } = pass;
    if (checkpointed !== last) {
      last = checkpointed;
      lastPass = { log, checkpointed, busy, ms: performance.now() - startMs };
      passes++;
    }
  }, intervalMs);
}

serveRpc<CheckpointerProtocol>({ start, stats: () => ({ last: lastPass, passes }) }, { order: 'sequential' });
