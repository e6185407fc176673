/**
 * Destinations that exist, as the event-creating routes check them: a short-lived, bounded cache
 * of positive answers in front of `store.destinationGet`, so that a single-event request does not
 * read its destination from the store every time (on SQLite every store read is a message to the
 * store's thread and back, ~60 µs of CPU when it does not share the trip with others).
 *
 * Only found destinations are kept, so a destination created on any node is seen at once; one
 * deleted on another node may still be accepted for up to TTL_MS (its events are then discarded
 * at fire, "destination does not exist", as events scheduled just before a delete are). A put or
 * delete through this node drops the entry at once (`forget`).
 */
import type { Clock } from '../core/clock.ts';
import { TtlCache } from '../core/ttl-cache.ts';
import type { DestinationRecord, Store } from '../store/store.ts';

export const KNOWN_DESTINATIONS_TTL_MS = 1_000;
export const KNOWN_DESTINATIONS_MAX = 10_000;

export class KnownDestinations implements Pick<Store, 'destinationGet'> {
  private readonly cache: TtlCache<string, DestinationRecord>;

  constructor(
    private readonly store: Pick<Store, 'destinationGet'>,
    private readonly clock: Clock,
  ) {
    this.cache = new TtlCache({
      ttlMs: KNOWN_DESTINATIONS_TTL_MS,
      entriesMax: KNOWN_DESTINATIONS_MAX,
      nowMs: () => clock.monotonicMs(),
    });
  }

  async destinationGet(params: { tenantId: string; name: string }): Promise<DestinationRecord | null> {
    const key = `${params.tenantId}\u0000${params.name}`;
    const hit = this.cache.get(key);
    if (hit) return hit;
    const readAtMs = this.clock.monotonicMs();
    const record = await this.store.destinationGet(params);
    if (record) this.cache.set(key, record, readAtMs);
    else this.cache.delete(key);
    return record;
  }

  forget(tenantId: string, name: string): void {
    this.cache.delete(`${tenantId}\u0000${name}`);
  }
}
