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
import { RpcClient, startWorker } from '../../core/thread-rpc.ts';

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

export interface CheckpointStats {
  /** The latest pass that copied frames (null before the first). */
  last: CheckpointPass | null;
  /** Passes that copied frames. */
  passes: number;
}

/** What the worker (checkpointer-worker.ts) answers. */
export type CheckpointerProtocol = {
  /** Opens its connection on `file` and checkpoints every `intervalMs` from then on. */
  start(file: string, intervalMs: number): void;
  stats(): CheckpointStats;
};

export class Checkpointer {
  private readonly rpc: RpcClient<CheckpointerProtocol>;

  constructor(file: string, intervalMs = CHECKPOINT_INTERVAL_MS) {
    const worker = startWorker(new URL('./checkpointer-worker.ts', import.meta.url));
    // Never keeps the process alive; a worker that fails leaves the writer's own auto-checkpoint.
    worker.unref();
    this.rpc = new RpcClient(worker);
    this.rpc.call('start', file, intervalMs).catch(() => {});
  }

  /** The latest pass that copied frames, and how many did. */
  stats(): Promise<CheckpointStats> {
    return this.rpc.call('stats');
  }

  async close(): Promise<void> {
    await this.rpc.terminate();
  }
}
