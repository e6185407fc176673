/**
 * WAL checkpoints off the store's writer. SQLite's own auto-checkpoint runs inside the commit that
 * pushes the WAL past its threshold: that commit copies every page back into the database file and
 * fsyncs it, on the thread that holds the write lock. Under a flood (claims and outcomes committed
 * every few milliseconds) those copies were a large share of the store thread's time. Here a
 * worker with a connection of its own runs a PASSIVE checkpoint every CHECKPOINT_INTERVAL_MS: it
 * copies the frames no reader still needs, waits for no lock, and the writer goes on meanwhile.
 *
 * The writer keeps an auto-checkpoint at WRITER_AUTOCHECKPOINT_PAGES as the bound on the WAL if
 * this worker falls behind or dies (it is not restarted: the bound holds without it).
 */
import { Worker } from 'node:worker_threads';

export const CHECKPOINT_INTERVAL_MS = 50;
/** The writer's own auto-checkpoint, a fallback: 16,384 pages of 4 KiB, the WAL's size limit (queries.ts). */
export const WRITER_AUTOCHECKPOINT_PAGES = 16_384;

export interface CheckpointPass {
  /** Frames in the WAL. */
  log: number;
  /** Frames copied back into the database so far. */
  checkpointed: number;
  busy: number;
  ms: number;
}

export class Checkpointer {
  private readonly worker: Worker;
  private lastPass: CheckpointPass | null = null;
  private passesCount = 0;

  constructor(file: string, intervalMs = CHECKPOINT_INTERVAL_MS) {
    this.worker = new Worker(new URL('./checkpointer-worker.mjs', import.meta.url), { workerData: { file, intervalMs } });
    // Never keeps the process alive; a worker that fails leaves the writer's own auto-checkpoint.
    this.worker.unref();
    this.worker.on('message', (pass: CheckpointPass) => {
      this.lastPass = pass;
      this.passesCount++;
    });
    this.worker.on('error', () => {});
  }

  /** The latest pass that copied frames, and how many did. */
  get stats(): { last: CheckpointPass | null; passes: number } {
    return { last: this.lastPass, passes: this.passesCount };
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}
