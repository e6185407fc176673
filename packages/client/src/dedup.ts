/**
 * Dropping duplicate deliveries on the receiver's side.
 *
 * Belfry delivers at least once: after a timeout or a crash it may deliver an event the receiver
 * already handled. Every delivery carries the event's id (`webhook-id` on webhooks,
 * `belfry-event-id` on broker messages), the same on every attempt, so a receiver that remembers
 * the ids it has handled for a while can drop the second copy, as the clients of Tencent's timer
 * do. The memory is a store with two operations, so a single process keeps it in a bounded LRU
 * (MemoryDedupStore) and a fleet of receivers shares one in Redis (`SET key 1 NX PX ttl`).
 *
 *   const dedup = new Deduplicator();                    // 100,000 ids for 24 h
 *   const outcome = await dedup.run(headers, () => handle(payload));
 *   if (outcome.duplicate) return reply(200);             // handled before: acknowledge, do nothing
 *
 * A replay (POST /v1/events/{id}/replay) delivers the same id again on purpose: a receiver that
 * still remembers it drops it too, so forget() the id first when a replay must be handled again.
 */

/** Where handled ids are remembered. Implementations must bound what they keep. */
export interface DedupStore {
  /**
   * Records `key` for `ttlMs` unless it is recorded already (and not expired). True when this call
   * recorded it (first delivery), false when it was there (a duplicate). Atomic per key.
   */
  claim(key: string, ttlMs: number): boolean | Promise<boolean>;
  /** Forgets `key` (its handling failed, so the next delivery must be handled). */
  release(key: string): void | Promise<void>;
}

export const DEDUP_ENTRIES_MAX_DEFAULT = 100_000;
export const DEDUP_TTL_MS_DEFAULT = 24 * 60 * 60 * 1000;

/**
 * A bounded in-memory store: at most `entriesMax` keys; the least recently seen goes first when
 * full; a key older than its TTL counts as absent. A Map keeps insertion order, so moving a key to
 * the end on each hit makes the first key the least recently seen: every operation is O(1).
 */
export class MemoryDedupStore implements DedupStore {
  private readonly expiresAtMs = new Map<string, number>();

  constructor(
    private readonly entriesMax = DEDUP_ENTRIES_MAX_DEFAULT,
    private readonly now: () => number = Date.now,
  ) {
    if (!(entriesMax >= 1)) throw new RangeError('entriesMax must be at least 1');
  }

  get size(): number {
    return this.expiresAtMs.size;
  }

  claim(key: string, ttlMs: number): boolean {
    const now = this.now();
    const expiresAt = this.expiresAtMs.get(key);
    if (expiresAt !== undefined) {
      this.expiresAtMs.delete(key);
      if (expiresAt > now) {
        this.expiresAtMs.set(key, expiresAt); // most recently seen; the TTL still runs from the first delivery
        return false;
      }
    }
    while (this.expiresAtMs.size >= this.entriesMax) {
      const oldest = this.expiresAtMs.keys().next().value as string;
      this.expiresAtMs.delete(oldest);
    }
    this.expiresAtMs.set(key, now + ttlMs);
    return true;
  }

  release(key: string): void {
    this.expiresAtMs.delete(key);
  }
}

/** The two commands of a Redis client that redisDedupStore uses (as ioredis spells them). */
export interface RedisLike {
  set(key: string, value: string, px: 'PX', ttlMs: number, nx: 'NX'): Promise<unknown>;
  del(key: string): Promise<unknown>;
}

/**
 * A DedupStore in Redis, shared by every receiver of a fleet: `SET key 1 PX ttl NX` records a key
 * only when it is absent (atomic in Redis), and Redis expires it; bounded by the TTL and Redis's
 * own maxmemory policy. Bring your own client: the SDK adds no Redis dependency.
 */
export function redisDedupStore(redis: RedisLike): DedupStore {
  return {
    claim: async (key, ttlMs) => (await redis.set(key, '1', 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')) === 'OK',
    release: async (key) => void (await redis.del(key)),
  };
}

export interface DeduplicatorOptions {
  /** Default: a MemoryDedupStore of 100,000 ids. */
  store?: DedupStore;
  /** How long an id is remembered; longer than the longest retry schedule of your events. Default 24 h. */
  ttlMs?: number;
  /** Prefix of the store's keys (a shared Redis). Default `belfry:dedup:`. */
  keyPrefix?: string;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

/** The delivery's event id: `webhook-id` (webhooks) or `belfry-event-id` (broker messages). */
export function deliveryId(headers: HeaderSource): string | undefined {
  for (const name of ['webhook-id', 'belfry-event-id']) {
    let value: string | string[] | null | undefined;
    if (typeof (headers as Headers).get === 'function') value = (headers as Headers).get(name);
    else {
      const record = headers as Record<string, string | string[] | undefined>;
      value = record[name] ?? record[Object.keys(record).find((k) => k.toLowerCase() === name) ?? ''];
    }
    const text = Array.isArray(value) ? value[0] : value;
    if (text) return text;
  }
  return undefined;
}

export class Deduplicator {
  private readonly store: DedupStore;
  private readonly ttlMs: number;
  private readonly keyPrefix: string;

  constructor(options: DeduplicatorOptions = {}) {
    this.store = options.store ?? new MemoryDedupStore();
    this.ttlMs = options.ttlMs ?? DEDUP_TTL_MS_DEFAULT;
    this.keyPrefix = options.keyPrefix ?? 'belfry:dedup:';
  }

  /** True the first time `id` is seen (within the TTL), false for a duplicate. */
  async firstTime(id: string): Promise<boolean> {
    return this.store.claim(this.keyPrefix + id, this.ttlMs);
  }

  /** Forgets `id`, so its next delivery is handled. */
  async forget(id: string): Promise<void> {
    await this.store.release(this.keyPrefix + id);
  }

  /**
   * Runs `handle` for the first delivery of an id and skips it for duplicates. When `handle`
   * throws, the id is forgotten (so Belfry's retry is handled) and the error goes on. Headers
   * without an id run `handle` (nothing to drop them by).
   */
  async run<T>(
    headersOrId: HeaderSource | string,
    handle: () => T | Promise<T>,
  ): Promise<{ duplicate: true } | { duplicate: false; result: T }> {
    const id = typeof headersOrId === 'string' ? headersOrId : deliveryId(headersOrId);
    if (id === undefined) return { duplicate: false, result: await handle() };
    if (!(await this.firstTime(id))) return { duplicate: true };
    try {
      return { duplicate: false, result: await handle() };
    } catch (err) {
      await this.forget(id);
      throw err;
    }
  }
}
