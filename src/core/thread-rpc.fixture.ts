/** A worker for thread-rpc.test.ts: one method per behaviour the tests look at. */
import { parentPort } from 'node:worker_threads';
import { BelfryError } from './errors.ts';
import { serveRpc, threadData } from './thread-rpc.ts';

export type FixtureProtocol = {
  add(a: number, b: number): number;
  /** Waits `ms`, then answers `value`. */
  later(ms: number, value: string): Promise<string>;
  fail(kind: 'belfry' | 'range' | 'coded' | 'string'): never;
  /** The byte length of a buffer moved here. */
  bytes(buffer: ArrayBuffer): number;
  /** The messages of calls received so far, and the calls each held. */
  batches(): number[];
  exit(code: number): void;
  /** Answers something the structured clone refuses. */
  uncloneable(): unknown;
  /**
   * Blocks the thread: sets flags[0] to 1 (and wakes who waits on it), then waits until flags[1]
   * is set, and answers 'held'.
   */
  hold(flags: SharedArrayBuffer): string;
};

/** How the fixture serves: in order, at once, or in order with the calls `later(_, 'first…')` first. */
export type FixtureOrder = 'sequential' | 'concurrent' | 'sequential-first';

const batches: number[] = [];
parentPort?.on('message', (calls: unknown[]) => batches.push(calls.length));
const server = serveRpc<FixtureProtocol>(
  {
    add: (a, b) => a + b,
    later: (ms, value) => new Promise((resolve) => setTimeout(() => resolve(value), ms)),
    fail(kind) {
      if (kind === 'belfry') throw new BelfryError('conflict', 'taken', [{ field: 'id', message: 'in use' }]);
      if (kind === 'range') throw new RangeError('out of range');
      if (kind === 'string') throw 'a string';
      throw Object.assign(new Error('disk full'), { name: 'SqliteError', code: 'SQLITE_FULL' });
    },
    bytes: (buffer) => buffer.byteLength,
    batches: () => batches.slice(0, -1),
    exit: (code) => process.exit(code),
    uncloneable: () => () => 'a function',
    hold(flags) {
      const cells = new Int32Array(flags);
      Atomics.store(cells, 0, 1);
      Atomics.notify(cells, 0);
      Atomics.wait(cells, 1, 0);
      return 'held';
    },
  },
  threadData<FixtureOrder>() === 'sequential-first'
    ? { order: 'sequential', first: (method, args) => method === 'later' && String(args[1]).startsWith('first') }
    : { order: threadData<'sequential' | 'concurrent'>() },
);
void server;
