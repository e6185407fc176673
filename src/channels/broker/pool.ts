/**
 * Broker connections pooled per destination (tenant + name): one connection each, opened on the
 * first delivery, shared by every delivery to it, replaced when the destination's target changes,
 * and closed when it is forgotten (deleted or changed), broken, or idle for `idleMs`.
 *
 * Bounds: at most `connectionsMax` connections; past it the least recently used idle one closes.
 */
import type { Clock } from '../../core/clock.ts';

export const POOL_IDLE_MS_DEFAULT = 60_000;
export const POOL_CONNECTIONS_MAX_DEFAULT = 1_000;
/** How often idle connections are looked for. */
const SWEEP_INTERVAL_MS = 5_000;

export interface PoolOptions<C> {
  close(conn: C): Promise<void>;
  clock: Clock;
  idleMs?: number;
  connectionsMax?: number;
}

interface Entry<C> {
  fingerprint: string;
  conn: Promise<C>;
  lastUsedMs: number;
  inflight: number;
}

export class ConnectionPool<C> {
  private readonly entries = new Map<string, Entry<C>>();
  private readonly idleMs: number;
  private readonly connectionsMax: number;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly opts: PoolOptions<C>) {
    this.idleMs = opts.idleMs ?? POOL_IDLE_MS_DEFAULT;
    this.connectionsMax = opts.connectionsMax ?? POOL_CONNECTIONS_MAX_DEFAULT;
    this.timer = setInterval(() => this.sweep(), Math.min(SWEEP_INTERVAL_MS, this.idleMs));
    this.timer.unref();
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * Runs `use` with the destination's connection, opening it first when there is none or its
   * target changed (`fingerprint`). A failed open is not kept: the next delivery opens again.
   */
  async with<T>(poolKey: string, fingerprint: string, open: () => Promise<C>, use: (conn: C) => Promise<T>): Promise<T> {
    let entry = this.entries.get(poolKey);
    if (entry && entry.fingerprint !== fingerprint) {
      this.drop(poolKey);
      entry = undefined;
    }
    if (!entry) {
      if (this.entries.size >= this.connectionsMax) this.closeLeastRecentIdle();
      const created: Entry<C> = { fingerprint, conn: open(), lastUsedMs: this.opts.clock.monotonicMs(), inflight: 0 };
      created.conn.catch(() => {
        if (this.entries.get(poolKey) === created) this.entries.delete(poolKey);
      });
      this.entries.set(poolKey, created);
      entry = created;
    }
    entry.inflight++;
    try {
      return await use(await entry.conn);
    } finally {
      entry.inflight--;
      entry.lastUsedMs = this.opts.clock.monotonicMs();
    }
  }

  /** Closes the destination's connection (deleted, changed or broken); deliveries in flight on it fail. */
  drop(poolKey: string): void {
    const entry = this.entries.get(poolKey);
    if (!entry) return;
    this.entries.delete(poolKey);
    entry.conn.then((c) => this.opts.close(c)).catch(() => {});
  }

  /** Drops `conn` only if it is still the pooled one of `poolKey` (a broken connection's own report). */
  dropIf(poolKey: string, conn: C): void {
    const entry = this.entries.get(poolKey);
    if (!entry) return;
    entry.conn.then((c) => {
      if (c === conn && this.entries.get(poolKey) === entry) this.drop(poolKey);
    }, () => {});
  }

  /** Closes connections idle for idleMs. */
  sweep(): void {
    const now = this.opts.clock.monotonicMs();
    for (const [key, entry] of this.entries) if (entry.inflight === 0 && now - entry.lastUsedMs >= this.idleMs) this.drop(key);
  }

  private closeLeastRecentIdle(): void {
    let oldest: [string, Entry<C>] | null = null;
    for (const kv of this.entries) if (kv[1].inflight === 0 && (oldest === null || kv[1].lastUsedMs < oldest[1].lastUsedMs)) oldest = kv;
    if (oldest) this.drop(oldest[0]);
  }

  async closeAll(): Promise<void> {
    clearInterval(this.timer);
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(all.map((e) => e.conn.then((c) => this.opts.close(c)).catch(() => {})));
  }
}
