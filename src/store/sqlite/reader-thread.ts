/**
 * Long reads of the SQLite store (counts over every event) on a worker thread with a read-only
 * connection of its own on the same WAL file. better-sqlite3 runs a statement to its end on the
 * calling thread; a count of 10,000,000 rows on the node's event loop held every request and every
 * fire back for as long as it took (385 ms per /metrics scrape at 1,000,000 events). On its own
 * thread it costs the event loop one message each way; in WAL mode it never blocks the writer.
 *
 * The worker starts on the first read and lives until close(); a worker that fails is replaced on
 * the next read. Bounds: READS_IN_FLIGHT_MAX reads queued at once, READ_MS_MAX per read (then the
 * worker is ended, which aborts its statement).
 */
import { Worker } from 'node:worker_threads';

export const READS_IN_FLIGHT_MAX = 64;
export const READ_MS_MAX = 300_000;

interface Pending {
  resolve(rows: unknown[]): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

type Reply = { id: number; rows: unknown[] } | { id: number; error: string };

export class ReaderThread {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
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
    if (this.pending.size >= READS_IN_FLIGHT_MAX) return Promise.reject(new Error(`sqlite reader thread: ${READS_IN_FLIGHT_MAX} reads already in flight`));
    const worker = this.start();
    const id = this.nextId++;
    return new Promise<Row[]>((resolve, reject) => {
      const timer = setTimeout(() => this.fail(new Error(`sqlite reader thread: ${name} took more than ${READ_MS_MAX} ms`)), READ_MS_MAX);
      timer.unref();
      this.pending.set(id, { resolve: resolve as (rows: unknown[]) => void, reject, timer });
      worker.postMessage({ id, name, params });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.fail(new Error('sqlite reader thread: closed'));
    await worker?.terminate();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(new URL('./reader-thread-worker.mjs', import.meta.url), {
      workerData: { file: this.file, statements: this.statements },
    });
    // An idle reader never keeps the process alive.
    worker.unref();
    worker.on('message', (reply: Reply) => {
      const p = this.pending.get(reply.id);
      if (!p) return;
      this.pending.delete(reply.id);
      clearTimeout(p.timer);
      if ('error' in reply) p.reject(new Error(`sqlite reader thread: ${reply.error}`));
      else p.resolve(reply.rows);
    });
    worker.on('error', (err) => this.fail(err));
    worker.on('exit', (code) => {
      if (this.worker === worker) this.fail(new Error(`sqlite reader thread exited (code ${code})`));
    });
    this.worker = worker;
    return worker;
  }

  /** Rejects every read in flight and drops the worker (the next read starts a new one). */
  private fail(err: Error): void {
    const worker = this.worker;
    this.worker = null;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
    void worker?.terminate();
  }
}
