/**
 * Which Citus shard holds each Belfry shard: Belfry's shards (256 by default) are values of the
 * distribution column `shard`, which Citus hashes into its own shards (32 by default), so several
 * Belfry shards share one Citus shard. A batch of claims or outcomes, or a due list, runs one
 * statement per Citus shard (`shard = ANY(...)` over the Belfry shards it holds, a router query
 * all the same) instead of one per Belfry shard: with the defaults, an eighth of the statements.
 *
 * The map is read from the coordinator's metadata (get_shard_id_for_distribution_column, no
 * worker involved) for the shards a batch names that it does not hold yet, and forgotten every
 * PLACEMENT_TTL_MS: Citus changes a shard's id only when it splits it (citus_split_shard_by_split_points
 * or a change of shard count), an operator's act; until the map is read again a group may span two
 * Citus shards, and its statement then fails (the claimer and the recorder try again) or runs on
 * both (docs/citus.md, "Adding workers").
 */
import type pg from 'pg';
import { rethrowUnavailable } from '../db.ts';

/** How long the map is used before it is read again. */
export const PLACEMENT_TTL_MS = 60_000;

/** The Belfry shards of one Citus shard that a call names, and the positions (in the call's list) of the items on them. */
export interface ShardGroup {
  shards: number[];
  indexes: number[];
}

const CITUS_SHARD_IDS = `SELECT s AS shard, get_shard_id_for_distribution_column('events', s)::text AS id
  FROM unnest($1::int[]) AS s`;

export class Placement {
  private readonly ids = new Map<number, string>();
  private readAt = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The items of `shards` (each an item's Belfry shard; null: no such item, left out) grouped by
   * the Citus shard that holds them, in order of first appearance.
   */
  async group(shards: readonly (number | null)[]): Promise<ShardGroup[]> {
    if (this.now() - this.readAt > PLACEMENT_TTL_MS) {
      this.ids.clear();
      this.readAt = this.now();
    }
    const missing = [...new Set(shards.filter((s): s is number => s !== null && !this.ids.has(s)))];
    if (missing.length > 0) {
      const res = await this.pool
        .query<{ shard: number; id: string }>(CITUS_SHARD_IDS, [missing])
        .catch(rethrowUnavailable);
      for (const r of res.rows) this.ids.set(r.shard, r.id);
    }
    const groups = new Map<string, ShardGroup>();
    shards.forEach((shard, i) => {
      if (shard === null) return;
      const id = this.ids.get(shard) ?? `belfry:${shard}`;
      const group = groups.get(id);
      if (!group) groups.set(id, { shards: [shard], indexes: [i] });
      else {
        if (!group.shards.includes(shard)) group.shards.push(shard);
        group.indexes.push(i);
      }
    });
    return [...groups.values()];
  }
}
