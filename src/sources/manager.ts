/**
 * Runs this node's readers of every tenant's sources. Every pollMs it reads the sources from the
 * store (by pages, at most SOURCES_PER_NODE_MAX) and starts a reader for a new one, restarts one
 * whose version changed (a PUT), stops one whose source was deleted, and starts again, after a
 * backoff (doubling up to backoffMsMax), one that crashed or could not connect, reporting the
 * error and the state `failing` to the store. Each node runs one reader per source; the source's
 * Kafka consumer group shares its partitions among the nodes.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { runEvery } from '../core/loop.ts';
import type { SourceRecord, SourceStore } from '../store/sources.ts';
import type { ReaderReport } from './kafka/reader.ts';

export const SOURCES_PER_NODE_MAX = 10_000;
const PAGE = 500;

/** What the manager needs of a reader (kafka/reader.ts). */
export interface Reader {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A reader whose module (and so its client library) is loaded when it starts: a node with no
 * source never loads one. `stop` before the load ended stops the reader once it is made.
 */
export function lazyReader(load: () => Promise<Reader>): Reader {
  let made: Promise<Reader> | null = null;
  return {
    async start() {
      made ??= load();
      await (await made).start();
    },
    async stop() {
      const reader = await made?.catch(() => null);
      await reader?.stop();
    },
  };
}

export interface SourceManagerDeps {
  store: Pick<SourceStore, 'sourceListAll' | 'sourceReport'>;
  clock: Clock;
  logger: Logger;
  /** A reader of `source` that reports through `report` and calls `onCrash` when it ends by itself. */
  makeReader(source: SourceRecord, report: (r: ReaderReport) => Promise<void>, onCrash: (err: Error) => void): Reader;
  /** Told when a reader could not connect or crashed (metrics). */
  onReaderFailed?(source: SourceRecord, err: Error): void;
}

export interface SourceManagerOptions {
  pollMs: number;
  backoffMsMin: number;
  backoffMsMax: number;
}

export const SOURCE_MANAGER_DEFAULTS: SourceManagerOptions = {
  pollMs: 1_000,
  backoffMsMin: 1_000,
  backoffMsMax: 30_000,
};

interface Running {
  version: number;
  reader: Reader | null;
  /** Monotonic ms before which a failed reader is not started again. */
  retryAtMs: number;
  backoffMs: number;
  failed: boolean;
}

const keyOf = (s: { tenantId: string; name: string }) => `${s.tenantId}\u0000${s.name}`;

export class SourceManager {
  readonly opts: SourceManagerOptions;
  private readonly running = new Map<string, Running>();
  private loop: Promise<void> | null = null;
  private readonly abort = new AbortController();
  /** Readers connecting now: stop() waits for them, so none is left running. */
  private readonly starting = new Set<Promise<void>>();
  /** Readers of deleted sources leaving their groups: stop() waits for them. */
  private readonly stopping = new Set<Promise<void>>();

  constructor(
    private readonly deps: SourceManagerDeps,
    opts: Partial<SourceManagerOptions> = {},
  ) {
    this.opts = { ...SOURCE_MANAGER_DEFAULTS, ...opts };
  }

  /** Reads the sources once and brings the readers in line with them. */
  async runOnce(): Promise<void> {
    const sources: SourceRecord[] = [];
    let after: { tenantId: string; name: string } | undefined;
    while (sources.length < SOURCES_PER_NODE_MAX) {
      const page = await this.deps.store.sourceListAll({ after, limit: PAGE });
      sources.push(...page);
      if (page.length < PAGE) break;
      after = page[page.length - 1];
    }
    const seen = new Set<string>();
    for (const source of sources) {
      const key = keyOf(source);
      seen.add(key);
      const cur = this.running.get(key);
      if (cur && cur.version === source.version && !(cur.failed && this.deps.clock.monotonicMs() >= cur.retryAtMs))
        continue;
      if (cur?.reader) await cur.reader.stop();
      // Not awaited: a broker that does not answer holds up only its own source.
      const started = this.startReader(source, cur && cur.version === source.version ? cur.backoffMs : 0);
      this.starting.add(started);
      void started.finally(() => this.starting.delete(started));
    }
    for (const [key, cur] of this.running) {
      if (seen.has(key)) continue;
      this.running.delete(key);
      // Not awaited: leaving the group waits for the reader's fetch in flight (seconds), and the
      // other sources' readers must not wait for it.
      const stopped = cur.reader?.stop().catch(() => {});
      if (stopped) {
        this.stopping.add(stopped);
        void stopped.finally(() => this.stopping.delete(stopped));
      }
    }
  }

  private async startReader(source: SourceRecord, lastBackoffMs: number): Promise<void> {
    const key = keyOf(source);
    const entry: Running = {
      version: source.version,
      reader: null,
      retryAtMs: 0,
      backoffMs: lastBackoffMs,
      failed: false,
    };
    this.running.set(key, entry);
    const report = (r: ReaderReport) => this.report(source, r);
    const fail = (err: Error) => {
      if (this.running.get(key) !== entry || entry.failed) return;
      entry.failed = true;
      entry.backoffMs = Math.min(this.opts.backoffMsMax, Math.max(this.opts.backoffMsMin, entry.backoffMs * 2));
      entry.retryAtMs = this.deps.clock.monotonicMs() + entry.backoffMs;
      this.deps.onReaderFailed?.(source, err);
      this.deps.logger.warn(
        { source: source.name, tenantId: source.tenantId, err: err.message, retryInMs: entry.backoffMs },
        'source reader failed',
      );
      report({
        acceptedAdd: 0,
        rejectedAdd: 0,
        errors: [{ at: this.deps.clock.now(), message: `reader failed: ${err.message}`.slice(0, 500) }],
        state: 'failing',
      }).catch(() => {});
      const reader = entry.reader;
      entry.reader = null;
      reader?.stop().catch(() => {});
    };
    const reader = this.deps.makeReader(source, report, fail);
    entry.reader = reader;
    try {
      await reader.start();
      entry.backoffMs = 0;
    } catch (err) {
      fail(err as Error);
    }
    // Stopped, deleted or replaced while it connected: it must not keep reading.
    if (this.abort.signal.aborted || this.running.get(key) !== entry) await reader.stop();
  }

  private async report(source: SourceRecord, r: ReaderReport): Promise<void> {
    await this.deps.store.sourceReport({
      tenantId: source.tenantId,
      name: source.name,
      ...r,
      now: this.deps.clock.now(),
    });
  }

  start(): void {
    this.loop ??= runEvery(this.deps.clock, this.opts.pollMs, this.abort.signal, () => this.runOnce(), {
      onError: (err) => this.deps.logger.warn({ err: (err as Error).message }, 'reading the sources failed'),
    });
  }

  /** Stops the loop and every reader (each leaves its consumer group). */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    await Promise.allSettled([...this.starting, ...this.stopping]);
    const readers = [...this.running.values()].map((r) => r.reader);
    this.running.clear();
    await Promise.all(readers.map((r) => r?.stop()));
  }
}
