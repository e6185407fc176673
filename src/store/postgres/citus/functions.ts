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

export const CLAIM_FUNCTION = 'belfry_citus_claim_v2';
export const RECORD_FUNCTION = 'belfry_citus_record_v2';

/** Arbitrary key of the advisory lock under which a node creates the functions. */
const FUNCTIONS_LOCK_KEY = 7_142_201_001;

/** `text` as a dollar-quoted literal whose tag it does not contain. */
function quoted(text: string): string {
  let tag = 'q';
  while (text.includes(`$${tag}$`)) tag += 'q';
  return `$${tag}$${text}$${tag}$`;
}

function claimFunction(schema: string): string {
  return `CREATE OR REPLACE FUNCTION "${schema}".${CLAIM_FUNCTION}(
      p_shard int, p_lock boolean, p_tenants text[], p_ids text[], p_versions int[], p_owner text,
      p_lease_until bigint, p_now bigint, p_detail text, p_fence boolean, p_shards int[])
    RETURNS SETOF json LANGUAGE plpgsql SET search_path TO "${schema}" AS $fn$
    DECLARE
      r record;
    BEGIN
      -- As a claim on plain PostgreSQL (a claim lost in a crash is rescued): no wait for the WAL flush.
      PERFORM set_config('synchronous_commit', 'off', true);
      IF p_lock THEN
        EXECUTE ${quoted(CITUS_SQL.eventGroupLock)} USING p_tenants, p_ids, p_shards;
      END IF;
      FOR r IN EXECUTE ${quoted(CITUS_SQL.eventClaim)}
          USING p_tenants, p_ids, p_versions, p_owner, p_lease_until, p_now, p_detail, p_fence, p_shards LOOP
        -- One row at a time: Citus runs an INSERT ... VALUES on the local shard at once, where an
        -- INSERT ... SELECT would go through its distributed insert machinery.
        INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, from_state, to_state, attempt, lateness_ms, detail)
        VALUES (r.shard, r.tenant_id, r.id, r.version, p_now, 'state', r.from_state, 'executing', r.attempts,
          p_now - r.due_at, p_detail);
        RETURN NEXT row_to_json(r);
      END LOOP;
    END $fn$`;
}

function recordFunction(schema: string): string {
  return `CREATE OR REPLACE FUNCTION "${schema}".${RECORD_FUNCTION}(
      p_shard int, p_tenants text[], p_ids text[], p_versions int[], p_owners text[], p_to text[],
      p_retry_at bigint[], p_status int[], p_errors text[], p_durations bigint[], p_now bigint, p_shards int[])
    RETURNS SETOF json LANGUAGE plpgsql SET search_path TO "${schema}" AS $fn$
    DECLARE
      r record;
    BEGIN
      FOR r IN EXECUTE ${quoted(CITUS_SQL.eventRecordAttempts)}
          USING p_tenants, p_ids, p_versions, p_owners, p_to, p_retry_at, p_status, p_errors, p_durations, p_now, p_shards LOOP
        INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, from_state, to_state, attempt, status, error,
          duration_ms, detail)
        VALUES (r.shard, r.tenant_id, r.id, r.version, p_now, 'state', 'executing', r.to_state, r.attempts, r.status,
          r.error, r.duration_ms, CASE WHEN r.retry_at IS NULL THEN NULL ELSE '{"retryAt":' || r.retry_at || '}' END);
        RETURN NEXT row_to_json(r);
      END LOOP;
    END $fn$`;
}

/** The signature create_distributed_function takes for each function, with its distribution argument. */
const DISTRIBUTED = [
  {
    name: CLAIM_FUNCTION,
    create: claimFunction,
    signature: `${CLAIM_FUNCTION}(int, boolean, text[], text[], int[], text, bigint, bigint, text, boolean, int[])`,
  },
  {
    name: RECORD_FUNCTION,
    create: recordFunction,
    signature: `${RECORD_FUNCTION}(int, text[], text[], int[], text[], text[], bigint[], int[], text[], bigint[], bigint, int[])`,
  },
];

/**
 * Creates the functions in `schema` where they are missing and makes them distributed functions
 * co-located with events, delegated by their first argument (a Belfry shard of the Citus shard
 * they work on). One node at a time; a no-op once done.
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
           WHERE n.nspname = $1 AND p.proname = $2 AND o.distribution_argument_index IS NOT NULL`,
          [schema, f.name],
        );
        if (present.rowCount !== 0) continue;
        await client.query(f.create(schema));
        await client.query(
          `SELECT create_distributed_function($1::regprocedure, 'p_shard', colocate_with => 'events')`,
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
