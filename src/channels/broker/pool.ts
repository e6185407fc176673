/**
 * Broker connections pooled per destination (tenant + name): one connection each, opened on the
 * first delivery, shared by every delivery to it, replaced when the destination's target changes,
 * and closed when it is forgotten (deleted or changed), broken, idle for `idleMs`, or when a send
 * on it timed out.
 *
 * Nothing waits on a broker beyond its attempt: a delivery leaves the pool when its attempt ends
 * (`ended`), whether it was waiting for the connection to open or for the broker's answer, so a
 * broker that never answers holds no delivery, and the idle sweep and the bound see the connection
 * as unused again. A send that timed out closes its connection at once (`close` destroys the
 * socket, waiting for no goodbye): what the client still queued for it (the payload, the
 * callback) goes with it, and the next delivery opens a new one. An open is bounded by
 * `openTimeoutMs`, handshake included, and aborted (its socket destroyed) past it or when dropped.
 *
 * Bounds: at most `connectionsMax` connections; past it the least recently used idle one closes,
 * and when none is idle the delivery is refused (retried later) rather than opening one more.
 */
import type { Clock } from '../../core/clock.ts';
import { TimeoutError } from './attempt.ts';

export const POOL_IDLE_MS_DEFAULT = 60_000;
export const POOL_CONNECTIONS_MAX_DEFAULT = 1_000;
export const POOL_OPEN_TIMEOUT_MS_DEFAULT = 10_000;
/** How often idle connections are looked for. */
const SWEEP_INTERVAL_MS = 5_000;

export interface PoolOptions<C> {
  /** Closes a connection at once: destroys its sockets, waits for no answer from the broker. */
  close(conn: C): Promise<void> | void;
  clock: Clock;
  idleMs?: number;
  connectionsMax?: number;
  /** Bound on one open, handshake included; past it the open is aborted. */
  openTimeoutMs?: number;
}

/**
 * Opens a connection. `signal` aborts when the open is given up (too slow, or the entry dropped)
 * and, after a successful open, when the connection is dropped: a channel ties its sockets to it,
 * so an abort destroys whatever it made.
 */
export type Open<C> = (signal: AbortSignal) => Promise<C>;

/** Every pooled connection is in use and none may be added: the delivery is retried later. */
export class PoolFullError extends Error {
  constructor(max: number) {
    super(`${max} broker connections are open on this node, all in use: not opening another`);
    this.name = 'PoolFullError';
  }
}

interface Entry<C> {
  fingerprint: string;
  conn: Promise<C>;
  /** Aborts the open (while it runs) when the entry is dropped or the open takes too long. */
  opening: AbortController;
  lastUsedMs: number;
  inflight: number;
}

export class ConnectionPool<C> {
  private readonly entries = new Map<string, Entry<C>>();
  private readonly idleMs: number;
  private readonly connectionsMax: number;
  private readonly openTimeoutMs: number;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly opts: PoolOptions<C>) {
    this.idleMs = opts.idleMs ?? POOL_IDLE_MS_DEFAULT;
    this.connectionsMax = opts.connectionsMax ?? POOL_CONNECTIONS_MAX_DEFAULT;
    this.openTimeoutMs = opts.openTimeoutMs ?? POOL_OPEN_TIMEOUT_MS_DEFAULT;
    this.timer = setInterval(() => this.sweep(), Math.min(SWEEP_INTERVAL_MS, this.idleMs));
    this.timer.unref();
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * Runs `use` with the destination's connection, opening it first when there is none or its
   * target changed (`fingerprint`). A failed open is not kept: the next delivery opens again.
   * When `ended` rejects (the attempt gave up), this rejects with its reason at once; if it was
   * a timeout while `use` ran, the connection is closed.
   */
  async with<T>(
    poolKey: string,
    fingerprint: string,
    open: Open<C>,
    use: (conn: C) => Promise<T>,
    ended?: Promise<never>,
  ): Promise<T> {
    let entry = this.entries.get(poolKey);
    if (entry && entry.fingerprint !== fingerprint) {
      this.drop(poolKey);
      entry = undefined;
    }
    if (!entry) {
      if (this.entries.size >= this.connectionsMax && !this.closeLeastRecentIdle())
        throw new PoolFullError(this.connectionsMax);
      entry = this.open(poolKey, fingerprint, open);
    }
    entry.inflight++;
    let using: Promise<T> | null = null;
    try {
      const conn = ended ? await Promise.race([entry.conn, ended]) : await entry.conn;
      using = use(conn);
      if (!ended) return await using;
      // The send goes on inside the client until the connection closes: its late end is ignored.
      using.catch(() => {});
      return await Promise.race([using, ended]);
    } catch (err) {
      // A send that timed out: the connection is not answering in time. Closing it frees what the
      // client holds for every send on it (they fail, and are retried on a new connection).
      if (using && err instanceof TimeoutError && this.entries.get(poolKey) === entry) this.drop(poolKey);
      throw err;
    } finally {
      entry.inflight--;
      entry.lastUsedMs = this.opts.clock.monotonicMs();
    }
  }

  private open(poolKey: string, fingerprint: string, open: Open<C>): Entry<C> {
    const opening = new AbortController();
    const timer = setTimeout(
      () => opening.abort(new Error(`connecting took longer than ${this.openTimeoutMs}ms`)),
      this.openTimeoutMs,
    );
    const conn = new Promise<C>((resolve, reject) => {
      opening.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          reject(opening.signal.reason);
        },
        { once: true },
      );
      open(opening.signal)
        .then((c) => {
          // Opened after it was given up: nobody will use it.
          if (opening.signal.aborted) void Promise.resolve(this.opts.close(c)).catch(() => {});
          else resolve(c);
        }, reject)
        .finally(() => clearTimeout(timer));
    });
    const entry: Entry<C> = { fingerprint, conn, opening, lastUsedMs: this.opts.clock.monotonicMs(), inflight: 0 };
    conn.catch(() => {
      if (this.entries.get(poolKey) === entry) this.entries.delete(poolKey);
    });
    this.entries.set(poolKey, entry);
    return entry;
  }

  /** Closes the destination's connection (deleted, changed or broken); deliveries in flight on it fail. */
  drop(poolKey: string): void {
    const entry = this.entries.get(poolKey);
    if (!entry) return;
    this.entries.delete(poolKey);
    this.closeEntry(entry);
  }

  /** Drops `conn` only if it is still the pooled one of `poolKey` (a broken connection's own report). */
  dropIf(poolKey: string, conn: C): void {
    const entry = this.entries.get(poolKey);
    if (!entry) return;
    entry.conn.then(
      (c) => {
        if (c === conn && this.entries.get(poolKey) === entry) this.drop(poolKey);
      },
      () => {},
    );
  }

  /** Closes connections idle for idleMs (an open still running included: it is aborted). */
  sweep(): void {
    const now = this.opts.clock.monotonicMs();
    for (const [key, entry] of this.entries)
      if (entry.inflight === 0 && now - entry.lastUsedMs >= this.idleMs) this.drop(key);
  }

  /** Closes the least recently used idle connection; false when every one is in use. */
  private closeLeastRecentIdle(): boolean {
    let oldest: [string, Entry<C>] | null = null;
    for (const kv of this.entries)
      if (kv[1].inflight === 0 && (oldest === null || kv[1].lastUsedMs < oldest[1].lastUsedMs)) oldest = kv;
    if (!oldest) return false;
    this.drop(oldest[0]);
    return true;
  }

  private closeEntry(entry: Entry<C>): void {
    entry.opening.abort(new Error('connection closed'));
    entry.conn.then((c) => this.opts.close(c)).catch(() => {});
  }

  async closeAll(): Promise<void> {
    clearInterval(this.timer);
    const all = [...this.entries.values()];
    this.entries.clear();
    for (const e of all) e.opening.abort(new Error('connection closed'));
    await Promise.all(all.map((e) => e.conn.then((c) => this.opts.close(c)).catch(() => {})));
  }
}
