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
import type { ShardHome } from './direct.ts';

/** How long the map is used before it is read again. */
export const PLACEMENT_TTL_MS = 60_000;

/** The Belfry shards of one Citus shard that a call names, and the positions (in the call's list) of the items on them. */
export interface ShardGroup {
  shards: number[];
  indexes: number[];
  /** The worker and tables of their Citus shard, when it has one placement on an active primary (direct.ts). */
  home: ShardHome | null;
}

/**
 * Each Belfry shard's Citus shard, with the worker that holds it and its tables' names there (one
 * row per placement: Belfry's tables have one, Citus' default replication factor).
 */
const CITUS_SHARD_IDS = `SELECT s AS shard, x.id::text AS id, n.nodename AS host, n.nodeport AS port,
    shard_name('events'::regclass, x.id) AS events,
    shard_name('transitions'::regclass, get_shard_id_for_distribution_column('transitions', s)) AS transitions,
    (SELECT shard_name('shard_assignments'::regclass, d.shardid) FROM pg_dist_shard d
      WHERE d.logicalrelid = 'shard_assignments'::regclass) AS assignments
  FROM unnest($1::int[]) AS s
  CROSS JOIN LATERAL (SELECT get_shard_id_for_distribution_column('events', s) AS id) x
  LEFT JOIN pg_dist_placement p ON p.shardid = x.id
  LEFT JOIN pg_dist_node n ON n.groupid = p.groupid AND n.isactive AND n.noderole = 'primary'`;

interface ShardRow {
  shard: number;
  id: string;
  host: string | null;
  port: number | null;
  events: string;
  transitions: string;
  assignments: string | null;
}

export class Placement {
  private readonly ids = new Map<number, string>();
  private readonly homes = new Map<string, ShardHome | null>();
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
    if (this.now() - this.readAt > PLACEMENT_TTL_MS) this.forget();
    const missing = [...new Set(shards.filter((s): s is number => s !== null && !this.ids.has(s)))];
    if (missing.length > 0) {
      const res = await this.pool
        .query<ShardRow>({ name: 'belfry_citus_placement', text: CITUS_SHARD_IDS, values: [missing] })
        .catch(rethrowUnavailable);
      const placements = new Map<string, ShardRow[]>();
      for (const r of res.rows) {
        this.ids.set(r.shard, r.id);
        placements.set(r.id, [...(placements.get(r.id) ?? []), r]);
      }
      for (const [id, rows] of placements) {
        // A row per Belfry shard of this Citus shard and per placement: usable when all name one placement.
        const r = rows[0];
        const one =
          r.host !== null &&
          r.port !== null &&
          r.assignments !== null &&
          rows.every((o) => o.host === r.host && o.port === r.port);
        this.homes.set(
          id,
          one
            ? {
                citusShard: id,
                host: r.host!,
                port: r.port!,
                events: r.events,
                transitions: r.transitions,
                assignments: r.assignments!,
              }
            : null,
        );
      }
    }
    const groups = new Map<string, ShardGroup>();
    shards.forEach((shard, i) => {
      if (shard === null) return;
      const id = this.ids.get(shard) ?? `belfry:${shard}`;
      const group = groups.get(id);
      if (!group) groups.set(id, { shards: [shard], indexes: [i], home: this.homes.get(id) ?? null });
      else {
        if (!group.shards.includes(shard)) group.shards.push(shard);
        group.indexes.push(i);
      }
    });
    return [...groups.values()];
  }

  /** Reads the map again at its next use (a shard was found elsewhere than it said). */
  forget(): void {
    this.ids.clear();
    this.homes.clear();
    this.readAt = this.now();
  }
}
