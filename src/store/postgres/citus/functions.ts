/**
 * The claim and the outcome batch on Citus as distributed functions: each runs, in one call, on
 * the worker that holds its Citus shard.
 *
 * Why: a claim or an outcome batch of one Citus shard is a transaction of four statements sent
 * through the coordinator (BEGIN, the pinned change, its transitions, COMMIT), each planned there
 * and again on the worker. Measured with the fire bench on one worker (20,000 events due at once):
 * about 1.0 statement per event, 700 us of coordinator CPU and 900 us of worker CPU per event.
 * A function made with create_distributed_function(..., 'p_shard', colocate_with => 'events') is
 * delegated: the coordinator sends the call to the worker holding p_shard's Citus shard, which
 * runs the body (the same statements, from queries.ts, and the transitions) locally, in one
 * transaction of its own.
 *
 * Delegation happens only outside a transaction block, which is how these are called. Created
 * when a store on Citus opens (under an advisory lock, since several nodes may open at once),
 * named by a version: a change to a body takes a new name, so nodes of two versions can share a
 * store while one replaces the other.
 */
import type pg from 'pg';
import { CITUS_SQL } from './queries.ts';

export const CLAIM_FUNCTION = 'belfry_citus_claim_v4';
export const RECORD_FUNCTION = 'belfry_citus_record_v4';
/** The guard of a statement a node sends to a worker itself (direct.ts). */
export const HERE_FUNCTION = 'belfry_citus_here_v1';
/** The SQLSTATE HERE_FUNCTION raises when the worker does not hold the shard (a class of Belfry's own). */
export const NOT_HERE_SQLSTATE = 'BF001';

/** Arbitrary key of the advisory lock under which a node creates the functions. */
const FUNCTIONS_LOCK_KEY = 7_142_201_001;

/** `sql` with its parameters renumbered: `$k` becomes `$${to[k]}` (the parameter of the function that holds that value). */
function renumbered(sql: string, to: Record<number, number>): string {
  return sql.replace(/\$(\d+)(?!\d)/g, (m, k) => (to[Number(k)] === undefined ? m : `$${to[Number(k)]}`));
}

/**
 * The statements are the functions' static SQL, their `$n` the functions' own parameters (the
 * statement's parameters first, in its order): PL/pgSQL prepares each once per connection and
 * keeps its plan, where EXECUTE would parse and plan it on every call (4-6 ms a call measured,
 * against 0.5 ms for a one-row read through the coordinator).
 */
function claimFunction(schema: string): string {
  // eventClaim: $1 tenants, $2 ids, $3 versions, $4 owner, $5 leaseUntil, $6 now, $7 detail,
  // $8 fence, $9 shards; eventGroupLock: $1 tenants, $2 ids, $3 shards.
  return `CREATE OR REPLACE FUNCTION "${schema}".${CLAIM_FUNCTION}(
      p_tenants text[], p_ids text[], p_versions int[], p_owner text, p_lease_until bigint, p_now bigint,
      p_detail text, p_fence boolean, p_shards int[], p_shard int, p_lock boolean)
    RETURNS SETOF json LANGUAGE plpgsql SET search_path TO "${schema}" AS $fn$
    #variable_conflict use_column
    DECLARE
      claimed_row record;
    BEGIN
      -- As a claim on plain PostgreSQL (a claim lost in a crash is rescued): no wait for the WAL flush.
      PERFORM set_config('synchronous_commit', 'off', true);
      IF p_lock THEN
        PERFORM * FROM (${renumbered(CITUS_SQL.eventGroupLock, { 3: 9 })}) locked;
      END IF;
      FOR claimed_row IN ${CITUS_SQL.eventClaim} LOOP
        -- One row at a time: Citus runs an INSERT ... VALUES on the local shard at once, where an
        -- INSERT ... SELECT would go through its distributed insert machinery.
        INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, from_state, to_state, attempt, lateness_ms, detail)
        VALUES (claimed_row.shard, claimed_row.tenant_id, claimed_row.id, claimed_row.version, p_now, 'state',
          claimed_row.from_state, 'executing', claimed_row.attempts, p_now - claimed_row.due_at, p_detail);
        RETURN NEXT row_to_json(claimed_row);
      END LOOP;
    END $fn$`;
}

function recordFunction(schema: string): string {
  // eventRecordAttempts: $1 tenants, $2 ids, $3 versions, $4 owners, $5 to, $6 retryAt, $7 status,
  // $8 errors, $9 durations, $10 now, $11 shards.
  return `CREATE OR REPLACE FUNCTION "${schema}".${RECORD_FUNCTION}(
      p_tenants text[], p_ids text[], p_versions int[], p_owners text[], p_to text[], p_retry_at bigint[],
      p_status int[], p_errors text[], p_durations bigint[], p_now bigint, p_shards int[], p_shard int)
    RETURNS SETOF json LANGUAGE plpgsql SET search_path TO "${schema}" AS $fn$
    #variable_conflict use_column
    DECLARE
      recorded_row record;
    BEGIN
      FOR recorded_row IN ${CITUS_SQL.eventRecordAttempts} LOOP
        INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, from_state, to_state, attempt, status, error,
          duration_ms, detail)
        VALUES (recorded_row.shard, recorded_row.tenant_id, recorded_row.id, recorded_row.version, p_now, 'state',
          'executing', recorded_row.to_state, recorded_row.attempts, recorded_row.status, recorded_row.error,
          recorded_row.duration_ms,
          CASE WHEN recorded_row.retry_at IS NULL THEN NULL ELSE '{"retryAt":' || recorded_row.retry_at || '}' END);
        RETURN NEXT row_to_json(recorded_row);
      END LOOP;
    END $fn$`;
}

/**
 * True when this node holds Citus shard p_shard (its pg_dist_placement, which Citus keeps in step
 * on every node), else raises NOT_HERE_SQLSTATE; with p_lock, first takes Citus' metadata lock on
 * the shard in share mode (what Citus' router writes take; a shard move or split takes it in
 * exclusive mode before it switches over), held to the end of the transaction. VOLATILE: its
 * check reads the placement after the lock (a snapshot of its own), so a write under a true
 * answer lands on the shard's live copy, whatever the calling statement's snapshot.
 */
function hereFunction(schema: string): string {
  return `CREATE OR REPLACE FUNCTION "${schema}".${HERE_FUNCTION}(p_shard bigint, p_lock boolean)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS $fn$
    BEGIN
      IF p_lock THEN
        PERFORM lock_shard_metadata(5, ARRAY[p_shard]);
      END IF;
      IF NOT EXISTS (SELECT 1 FROM pg_dist_placement
          WHERE shardid = p_shard AND groupid = (SELECT groupid FROM pg_dist_local_group)) THEN
        RAISE EXCEPTION 'belfry: Citus shard % is not on this node', p_shard USING ERRCODE = '${NOT_HERE_SQLSTATE}';
      END IF;
      RETURN true;
    END $fn$`;
}

/**
 * The functions create_distributed_function makes on every node: with their distribution
 * argument, delegated by it; without one (the guard), only copied to every node, workers added
 * later included.
 */
const DISTRIBUTED = [
  {
    name: CLAIM_FUNCTION,
    create: claimFunction,
    signature: `${CLAIM_FUNCTION}(text[], text[], int[], text, bigint, bigint, text, boolean, int[], int, boolean)`,
  },
  {
    name: RECORD_FUNCTION,
    create: recordFunction,
    signature: `${RECORD_FUNCTION}(text[], text[], int[], text[], text[], bigint[], int[], text[], bigint[], bigint, int[], int)`,
  },
  { name: HERE_FUNCTION, create: hereFunction, signature: `${HERE_FUNCTION}(bigint, boolean)`, local: true },
];

/**
 * Creates the functions in `schema` where they are missing and makes them distributed functions
 * co-located with events, delegated by p_shard (a Belfry shard of the Citus shard they work on).
 * One node at a time; a no-op once done.
 */
export async function ensureCitusFunctions(pool: pg.Pool, schema: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [FUNCTIONS_LOCK_KEY]);
    try {
      for (const f of DISTRIBUTED) {
        const present = await client.query(
          `SELECT 1 FROM pg_dist_object o JOIN pg_proc p ON o.classid = 'pg_proc'::regclass AND o.objid = p.oid
            JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname = $1 AND p.proname = $2 AND ($3 OR o.distribution_argument_index IS NOT NULL)`,
          [schema, f.name, 'local' in f],
        );
        if (present.rowCount !== 0) continue;
        await client.query(f.create(schema));
        await client.query(
          'local' in f
            ? 'SELECT create_distributed_function($1::regprocedure)'
            : `SELECT create_distributed_function($1::regprocedure, 'p_shard', colocate_with => 'events')`,
          [`"${schema}".${f.signature}`],
        );
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [FUNCTIONS_LOCK_KEY]);
    }
  } finally {
    client.release();
  }
}
