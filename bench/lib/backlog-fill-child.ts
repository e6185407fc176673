/**
 * Runs fillSqlite in a process of its own, so that the SQLite backlog loads while the PostgreSQL
 * one does (the SQLite driver is synchronous: in the bench's process it would block everything else).
 * Gets { file, spec } over IPC; answers with progress, then done or error.
 */
import { fillSqlite, type BacklogSpec } from './backlog-fill.ts';

export type FillMessage = { type: 'progress'; done: number } | { type: 'done' } | { type: 'error'; message: string };

const send = (msg: FillMessage) => process.send!(msg);

process.once('message', ({ file, spec }: { file: string; spec: BacklogSpec }) => {
  try {
    fillSqlite(file, spec, (done) => send({ type: 'progress', done }));
    send({ type: 'done' });
  } catch (err) {
    send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  }
  // The parent disconnects once it has the answer; then nothing holds this process open.
});
