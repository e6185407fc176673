/**
 * Long reads of the SQLite store (counts over every event) on a worker thread with a read-only
 * connection of its own on the same WAL file. The driver (node:sqlite) runs a statement to its end
 * on the calling thread; a count of 10,000,000 rows on the node's event loop held every request and every
 * fire back for as long as it took (385 ms per /metrics scrape at 1,000,000 events). On its own
 * thread it costs the event loop one message each way; in WAL mode it never blocks the writer.
 *
 * The worker starts on the first read and lives until close(); a worker that fails is replaced on
 * the next read. Bounds: READS_IN_FLIGHT_MAX reads queued at once, READ_MS_MAX per read (then the
 * worker is ended, which aborts its statement).
 */
import { RpcClient, startWorker } from '../../core/thread-rpc.ts';

export const READS_IN_FLIGHT_MAX = 64;
export const READ_MS_MAX = 300_000;

/** What the worker (reader-thread-worker.ts) answers. */
export type ReaderProtocol = {
  /** Opens the read-only connection; `statements` are the SQL it may run, by name. */
  open(file: string, statements: Record<string, string>): void;
  all(name: string, params?: Record<string, unknown>): unknown[];
};

export class ReaderThread {
  private rpc: RpcClient<ReaderProtocol> | null = null;
  private closed = false;

  constructor(
    /** The database file (WAL mode, kept open by the store's own connection). */
    private readonly file: string,
    /** The statements the worker may run, by name. */
    private readonly statements: Record<string, string>,
  ) {}

  /** Runs statement `name` with `params` on the worker's connection; resolves with every row. */
  all<Row>(name: string, params?: Record<string, unknown>): Promise<Row[]> {
    if (this.closed) return Promise.reject(new Error('sqlite reader thread: closed'));
    const rpc = this.start();
    if (rpc.inFlight >= READS_IN_FLIGHT_MAX)
      return Promise.reject(new Error(`sqlite reader thread: ${READS_IN_FLIGHT_MAX} reads already in flight`));
    const timer = setTimeout(
      () => this.fail(rpc, new Error(`sqlite reader thread: ${name} took more than ${READ_MS_MAX} ms`)),
      READ_MS_MAX,
    );
    timer.unref();
    const read = rpc.call('all', name, params) as Promise<Row[]>;
    read.then(
      () => clearTimeout(timer),
      () => clearTimeout(timer),
    );
    return read;
  }

  async close(): Promise<void> {
    this.closed = true;
    const rpc = this.rpc;
    if (rpc) this.fail(rpc, new Error('sqlite reader thread: closed'));
    await rpc?.worker.terminate();
  }

  private start(): RpcClient<ReaderProtocol> {
    if (this.rpc && !this.rpc.dead) return this.rpc;
    const worker = startWorker(new URL('./reader-thread-worker.ts', import.meta.url));
    // An idle reader never keeps the process alive.
    worker.unref();
    const rpc = new RpcClient<ReaderProtocol>(worker, {
      dead: (why) =>
        'exitCode' in why
          ? new Error(`sqlite reader thread exited (code ${why.exitCode})`)
          : 'error' in why
            ? why.error
            : new Error('sqlite reader thread: closed'),
      rebuildError: (w) => new Error(`sqlite reader thread: ${w.message}`),
    });
    // Sent first: the reads made after it wait for it on the thread.
    rpc.call('open', this.file, this.statements).catch(() => {});
    this.rpc = rpc;
    return rpc;
  }

  /** Rejects every read in flight with `err` and ends the worker (the next read starts a new one). */
  private fail(rpc: RpcClient<ReaderProtocol>, err: Error): void {
    rpc.fail({ error: err });
    if (this.rpc === rpc) this.rpc = null;
    void rpc.worker.terminate();
  }
}
