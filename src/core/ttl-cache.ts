/**
 * A bounded cache whose entries expire: a value is fresh for `ttlMs` after it was set (monotonic
 * time, so a wall-clock step changes nothing), the cache holds at most `entriesMax` entries, and
 * when it is full the entry set longest ago is dropped first (a Map iterates in insertion order,
 * and a set moves its key to the end).
 *
 * The one cache of the node's read-through lookups: API keys, tenants' limits, known
 * destinations, delivery settings and signing secrets, schedules read by the occurrence gate.
 */
export interface TtlCacheOptions {
  ttlMs: number;
  entriesMax: number;
  /** Monotonic milliseconds (Clock.monotonicMs). */
  nowMs(): number;
}

export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: V; expiresMs: number }>();
  /** Reads in flight (refresh), one per key: bounded by the keys being read at once. */
  private readonly reading = new Map<K, Promise<V>>();

  constructor(private readonly opts: TtlCacheOptions) {
    if (!(opts.entriesMax >= 1))
      throw new RangeError(`TtlCache: entriesMax must be at least 1, got ${opts.entriesMax}`);
  }

  /** The value set within ttlMs, or undefined. */
  get(key: K): V | undefined {
    const hit = this.entries.get(key);
    return hit && hit.expiresMs > this.opts.nowMs() ? hit.value : undefined;
  }

  /** The value set last, fresh or not (a caller that must not wait uses it while it reads again), or undefined. */
  peek(key: K): { value: V; fresh: boolean } | undefined {
    const hit = this.entries.get(key);
    return hit ? { value: hit.value, fresh: hit.expiresMs > this.opts.nowMs() } : undefined;
  }

  /**
   * Sets the value, fresh for ttlMs from `readAtMs` (default now: a caller that read the value
   * from a store passes the time before the read, so the value is never kept longer than ttlMs
   * after the read began); drops the oldest entry when full.
   */
  set(key: K, value: V, readAtMs: number = this.opts.nowMs()): void {
    this.entries.delete(key);
    if (this.entries.size >= this.opts.entriesMax) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, expiresMs: readAtMs + this.opts.ttlMs });
  }

  /**
   * Reads `key` with `load` and sets its value (fresh from when the read began), unless a read
   * of it is in flight: then that one. One read per key at a time, however many callers ask; a
   * read that fails sets nothing (the last value stays).
   */
  refresh(key: K, load: () => Promise<V>): Promise<V> {
    const inFlight = this.reading.get(key);
    if (inFlight) return inFlight;
    const readAtMs = this.opts.nowMs();
    const reading = load()
      .then((value) => {
        this.set(key, value, readAtMs);
        return value;
      })
      .finally(() => this.reading.delete(key));
    this.reading.set(key, reading);
    return reading;
  }

  /**
   * The value as last set, fresh or not, without waiting: when it is stale (or absent, with
   * `readAbsent`) a refresh starts in the background. For callers that must not wait on a read
   * (a claim, a delivery) once a value has been read.
   */
  peekRefreshing(key: K, load: () => Promise<V>, opts: { readAbsent: boolean }): V | undefined {
    const hit = this.peek(key);
    if (hit ? !hit.fresh : opts.readAbsent) this.refresh(key, load).catch(() => {});
    return hit?.value;
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  /** Deletes every entry whose value matches (fresh or not). */
  deleteWhere(matches: (value: V, key: K) => boolean): void {
    for (const [key, entry] of this.entries) if (matches(entry.value, key)) this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * The fresh promise cached under `key`, or `load()`'s, cached at once: callers that ask while it
   * loads share one load. A load that fails is not kept (the next caller loads again).
   */
  static loadOnce<K, T>(cache: TtlCache<K, Promise<T>>, key: K, load: () => Promise<T>): Promise<T> {
    const cached = cache.get(key);
    if (cached) return cached;
    const loading = load();
    cache.set(key, loading);
    loading.catch(() => {
      if (cache.peek(key)?.value === loading) cache.delete(key);
    });
    return loading;
  }
}
