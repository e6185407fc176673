/**
 * The PostgreSQL store's schema on Citus (distributed PostgreSQL): what grows with events is
 * distributed by `shard` and co-located, so that an event, its transitions and its locator row
 * live in one Citus shard; the small tables are reference tables (a copy on every worker), so a
 * statement that reads one beside an event stays on that event's shard.
 *
 * - distributed by `shard`, co-located: events (primary key (shard, tenant_id, id)), transitions
 *   ((shard, tenant_id, event_id, seq)) and event_locator.
 * - event_locator: (tenant, id) → the event's shard, keyed by shardOf(tenant, id), the shard the
 *   id alone names. An event's shard comes from its group when it has one, so (tenant, id) alone
 *   does not tell it; and with the shard in every unique key, nothing else keeps an id unique
 *   within its tenant. Written in the same transaction as the event.
 * - reference tables: every other table. Schedules among them: they grow with the users' recurring
 *   jobs, not with events, are found by (tenant, id), and an advance's compare-and-swap then
 *   touches one shard (the reference table's) before the occurrences go to theirs.
 *
 * The conversion runs once, in the migration's transaction, after the numbered migrations, on a
 * schema whose events table is empty (a store that holds events is not converted: see
 * docs/citus.md). Later migrations run on the distributed tables: Citus sends their DDL to every
 * shard.
 */
import type pg from 'pg';

/** The tables copied to every worker, in an order where a table comes after those it references. */
export const CITUS_REFERENCE_TABLES = [
  'schema_migrations',
  'tenants',
  'schedules',
  'api_keys',
  'destinations',
  'sources',
  'bulk_jobs',
  'nodes',
  'leader_lease',
  'shard_assignments',
  'claim_leases',
  'schedule_count_writes',
  'store_settings',
] as const;

/** The tables distributed by `shard`, co-located with events (the first). */
export const CITUS_DISTRIBUTED_TABLES = ['events', 'transitions', 'event_locator'] as const;

/** True when the database has the citus extension. */
export async function citusInstalled(db: pg.ClientBase | pg.Pool): Promise<boolean> {
  const res = await db.query(`SELECT 1 FROM pg_extension WHERE extname = 'citus'`);
  return res.rowCount === 1;
}

/** True when `schema`'s events table is distributed by Citus (false without Citus). */
export async function eventsDistributed(db: pg.ClientBase | pg.Pool, schema: string): Promise<boolean> {
  if (!(await citusInstalled(db))) return false;
  const res = await db.query(
    `SELECT 1 FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relname = 'events'`,
    [schema],
  );
  return res.rowCount === 1;
}

/**
 * Converts `schema` (migrated, not yet distributed) to the layout above, on `client` inside the
 * migration's transaction. Throws when Citus is missing or when events already holds rows.
 */
export async function distribute(client: pg.ClientBase, schema: string): Promise<void> {
  if (!(await citusInstalled(client)))
    throw new Error(
      `postgres: Citus mode was asked for, but the database has no citus extension (CREATE EXTENSION citus on the coordinator first)`,
    );
  const held = await client.query('SELECT 1 FROM events LIMIT 1');
  if (held.rowCount !== 0)
    throw new Error(
      `postgres: schema "${schema}" already holds events: a store is distributed on Citus when its schema is created, not afterwards; start on Citus with a new schema`,
    );
  // Primary keys that carry the distribution column: one subcommand per ALTER (a table that
  // references a reference table is a Citus table already, and those take one at a time).
  for (const sql of [
    'ALTER TABLE events DROP CONSTRAINT events_pkey',
    'ALTER TABLE events ADD PRIMARY KEY (shard, tenant_id, id)',
    'ALTER TABLE transitions ALTER COLUMN shard SET NOT NULL',
    'ALTER TABLE transitions DROP CONSTRAINT transitions_pkey',
    'ALTER TABLE transitions ADD PRIMARY KEY (shard, tenant_id, event_id, seq)',
    `CREATE TABLE event_locator (
       shard       integer NOT NULL,
       tenant_id   text COLLATE "C" NOT NULL,
       id          text COLLATE "C" NOT NULL,
       event_shard integer NOT NULL,
       PRIMARY KEY (shard, tenant_id, id)
     )`,
  ])
    await client.query(sql);
  for (const table of CITUS_REFERENCE_TABLES) await client.query('SELECT create_reference_table($1)', [table]);
  await client.query(`SELECT create_distributed_table('events', 'shard')`);
  for (const table of CITUS_DISTRIBUTED_TABLES.slice(1))
    await client.query(`SELECT create_distributed_table($1, 'shard', colocate_with => 'events')`, [table]);
}
