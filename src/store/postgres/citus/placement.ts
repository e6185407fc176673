/**
 * Which Citus shard holds each Belfry shard: Belfry's shards (256 by default) are values of the
 * distribution column `shard`, which Citus hashes into its own shards (32 by default), so several
 * Belfry shards share one Citus shard. A batch of claims or outcomes, or a due list, runs one
 * statement per Citus shard (`shard = ANY(...)` over the Belfry shards it holds, a router query
 * all the same) instead of one per Belfry shard: with the defaults, an eighth of the statements.
 *
 * The map is read from the coordinator's metadata (get_shard_id_for_distribution_column, no
 * worker involved) for the shards a batch names that it does not hold yet, with the worker that
 * holds each Citus shard and its tables' names there (direct.ts), and read again after
 * PLACEMENT_TTL_MS (the old one is kept while the coordinator cannot be read), or at once when a
 * worker no longer holds a shard the map placed there (moved, or split: a split gives new shard
 * ids, citus_split_shard_by_split_points or a change of shard count, an operator's act). A call
 * over a stale group then goes through the coordinator once, where it fails (the claimer and the
 * recorder try again) or runs on both new shards (docs/citus.md, "Adding workers").
 */
import type pg from 'pg';
import { rethrowUnavailable } from '../db.ts';
import type { ShardHome } from './direct.ts';

/** How long the map is used before it is read again. */
export const PLACEMENT_TTL_MS = 60_000;
/** When reading it again failed, how long the old map is used before the next try. */
export const PLACEMENT_RETRY_MS = 2_000;

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
    const stale = this.now() - this.readAt > PLACEMENT_TTL_MS;
    const wanted = [...new Set(shards.filter((s): s is number => s !== null))];
    const missing = stale ? wanted : wanted.filter((s) => !this.ids.has(s));
    if (missing.length > 0) {
      let res: pg.QueryResult<ShardRow>;
      try {
        res = await this.pool.query<ShardRow>({
          name: 'belfry_citus_placement',
          text: CITUS_SHARD_IDS,
          values: [missing],
        });
      } catch (err) {
        // The coordinator is down (a restart, a failover): the map read before is used a while
        // longer, where it names every shard asked (the direct route checks each shard on its
        // worker anyway), and read again after PLACEMENT_RETRY_MS.
        if (!stale || wanted.some((s) => !this.ids.has(s))) rethrowUnavailable(err);
        this.readAt = this.now() - PLACEMENT_TTL_MS + PLACEMENT_RETRY_MS;
        return this.grouped(shards);
      }
      if (stale) this.forget();
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
    return this.grouped(shards);
  }

  /** `shards` grouped by the map as it is (see group()). */
  private grouped(shards: readonly (number | null)[]): ShardGroup[] {
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
