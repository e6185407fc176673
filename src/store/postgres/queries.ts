/**
 * Every SQL statement of the PostgreSQL backend, each under a comment naming its parameters
 * ($1, $2, ...) and what it returns. Tables are unqualified: each connection's search_path is the
 * store's schema. Statements run as named prepared statements (the key below is the name), so
 * each connection parses and plans each one once.
 *
 * Shapes that recur:
 * - A batch travels as parallel arrays unnested WITH ORDINALITY (`ord`), so one statement serves
 *   a whole batch and results can be put back in input order.
 * - A state change and its transition are one statement: `WITH changed AS (UPDATE ... RETURNING)
 *   INSERT INTO transitions SELECT ... FROM changed`. A statement is atomic, so nothing is ever
 *   half-written, without a BEGIN/COMMIT round trip.
 * - Cluster times come from the database clock (NOW_MS), never from a parameter.
 */

import { SQL_STATE, SQL_STATE_LISTS } from '../core/state-lists.ts';
import type { ListKey } from '../event-list-plan.ts';

/** The database clock in epoch milliseconds, read at the moment of evaluation. */
const NOW_MS = `floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

/**
 * When a lease ($1, the caller's now) has ended: only once the database's clock says so too. The
 * caller's clock follows the database's (StoreClock) and never runs ahead of it, so this changes
 * nothing in a healthy cluster; it keeps a node whose clock went wrong from expiring live claims
 * across the cluster.
 */
const LEASE_EXPIRY_BOUND = `LEAST($1::bigint, ${NOW_MS})`;

/**
 * The state lists of the statements below, built from core/event.ts's transition table in the
 * exact spelling of the partial indexes (so the planner uses them): LIVE (not terminal), FIREABLE,
 * STARTED (a group member that has started delivery and holds its group), TERMINAL, and the
 * states cancel, replay, an edit and an attempt's outcome apply from.
 */
const { LIVE, FIREABLE, STARTED, TERMINAL, REPLAYABLE, CANCELABLE, EDITABLE, ATTEMPTING } = SQL_STATE_LISTS;

/**
 * `alias.state IN states`, spelled so that no partial index's predicate matches it: for the
 * primary-key probes of claims, outcomes, cancels and edits, which must stay one probe each.
 * Spelled plainly, the planner may AND the primary key with the partial index of those states
 * (events_due, events_executing) and read that whole index for every probe: on a table without
 * statistics (never analyzed: a fresh table, or autovacuum off) it did, for outcomes, 28,000
 * index entries per outcome while a burst kept that many executing (0.6 ms each, not 0.02).
 */
function stateIn(alias: string, states: string): string {
  return `(${alias}.state || '') IN ${states}`;
}

/** The columns of an EventRow, in order; `e.`-qualified for statements that join. */
export const EVENT_COLUMNS = `seq, tenant_id, id, shard, state, version, fire_at, due_at, destination, payload,
  headers, grp, retry, expire_at, tags, attempts, last_status, last_error, request_hash,
  created_at, updated_at, lease_owner, lease_until, queue, type`;
const EVENT_COLUMNS_E = EVENT_COLUMNS.split(',')
  .map((c) => `e.${c.trim()}`)
  .join(', ');

export const TRANSITION_COLUMNS = `tenant_id, event_id, seq, at, kind, from_state, to_state, attempt, status, error,
  duration_ms, lateness_ms, detail`;

/**
 * True when row `e` (a fireable grouped event) is its group's head: the one member that may be
 * claimed. A member that has started delivery (executing, or awaiting_retry after an attempt)
 * holds its group until it is terminal, whatever the fireAt of members created or edited
 * meanwhile; when none has started, the head is the first live member by (fire_at, seq). Two
 * probes: events_group_started (the started members, normally at most one) and events_group_live
 * (stops at the first row before `e`).
 *
 * Alone this is not safe for two claims of one group at once: a member created ahead of a head
 * whose claim has not committed yet sees that head still scheduled and after it. Every claim that
 * may take a grouped event therefore first takes the group's advisory lock in a statement of its
 * own (GROUP_LOCKS: claims of one group run one after another), and runs this predicate in a
 * later statement of the same transaction, whose snapshot sees every claim committed before.
 * Two claims of the same row meet at its row lock (FOR UPDATE SKIP LOCKED: the second skips it,
 * or, if the first already committed, its version check fails).
 */
const IS_GROUP_HEAD = `(NOT EXISTS (
      SELECT 1 FROM events o
      WHERE o.tenant_id = e.tenant_id AND o.grp = e.grp AND o.state IN ${STARTED} AND o.seq <> e.seq
        AND (o.state = ${SQL_STATE.executing} OR e.state <> ${SQL_STATE.awaiting_retry} OR (o.fire_at, o.seq) < (e.fire_at, e.seq)))
    AND (e.state = ${SQL_STATE.awaiting_retry} OR NOT EXISTS (
      SELECT 1 FROM events o
      WHERE o.tenant_id = e.tenant_id AND o.grp = e.grp AND o.state IN ${LIVE}
        AND (o.fire_at, o.seq) < (e.fire_at, e.seq))))`;

/**
 * True when destination `name` of `tenant` is a pull destination (false for an inline URL, a NULL
 * name, or no such destination): one primary-key probe of destinations.
 */
export const IS_PULL_DESTINATION = (tenant: string, name: string) => `EXISTS (SELECT 1 FROM destinations d
      WHERE d.tenant_id = ${tenant} AND d.name = ${name} AND d.config ->> 'kind' = 'pull')`;

/**
 * A pull claim after its page (a MATERIALIZED CTE `page` of (tenant_id, id) rows in due order, read
 * from a bounded walk of an index): locks each row still fireable, a pull row due by $3 and its
 * group's head (rows another claimer holds are skipped), stops at $5, claims them with lease $6
 * and receipt $7 and appends their transitions (detail $8). Returns (EventRow)[] in due order.
 * No ORDER BY between the page and the LIMIT: the nested loop walks the page in its order and
 * stops at $5 rows, so a claim locks about what it takes, and a concurrent claim of the same
 * queue skips those and takes the next (a sort there locked the whole page, 4 × max rows, and two
 * claims at once got one page and nothing). Were a plan to walk the page out of order, a claim
 * would take later events first: never a wrong one (each row's own checks hold).
 */
const PULL_CLAIM_REST = `claimable AS (
      SELECT l.row_id, l.from_state, l.due_at, l.id FROM page p CROSS JOIN LATERAL (
        SELECT e.ctid AS row_id, e.state AS from_state, e.due_at, e.id FROM events e
        WHERE e.tenant_id = p.tenant_id AND e.id = p.id AND ${stateIn('e', FIREABLE)}
          AND e.pull AND e.due_at <= $3 AND (e.grp IS NULL OR ${IS_GROUP_HEAD})
        FOR UPDATE SKIP LOCKED
      ) l
      LIMIT $5
    ), claimed AS (
      UPDATE events e SET state = ${SQL_STATE.executing}, version = e.version + 1, attempts = e.attempts + 1,
          lease_owner = 'pull', lease_until = $6, receipt = $7, updated_at = $3
      FROM claimable c
      WHERE e.ctid = c.row_id
      RETURNING ${EVENT_COLUMNS_E}, c.from_state
    ), traced AS (
      INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, from_state, to_state, attempt, lateness_ms, detail)
      SELECT shard, tenant_id, id, version, $3, 'state', from_state, 'executing', attempts, $3 - due_at, $8 FROM claimed
    )
    SELECT * FROM claimed ORDER BY due_at, id`;

/** A pull claim's page: the first $4 fireable rows of queue $2 of tenant $1 due by $3, in due order. */
const PULL_PAGE_ANY = `SELECT tenant_id, id FROM events
      WHERE tenant_id = $1 AND queue = $2 AND state IN ${FIREABLE} AND due_at <= $3
      ORDER BY due_at, id LIMIT $4`;

/** As PULL_PAGE_ANY, of the types in `types` (a text[] parameter): the first $4 rows of each type. */
const PULL_PAGE_TYPED = (
  types: string,
) => `SELECT x.tenant_id, x.id FROM unnest(${types}::text[]) AS t(type) CROSS JOIN LATERAL (
        SELECT tenant_id, id, due_at FROM events
        WHERE tenant_id = $1 AND queue = $2 AND type = t.type AND state IN ${FIREABLE} AND pull AND due_at <= $3
        ORDER BY due_at, id LIMIT $4) x
      ORDER BY x.due_at, x.id`;

/**
 * Takes the transaction-level advisory lock of each distinct group of `members` (rows of
 * tenant_id, grp; ungrouped rows are left out), in key order so that two claims never wait on
 * each other in a cycle. Answers one row, { locked }: how many groups it locked.
 */
function groupLocks(members: string): string {
  return `SELECT count(pg_advisory_xact_lock(k))::int AS locked FROM (
      SELECT DISTINCT hashtextextended(m.tenant_id || chr(10) || m.grp, 0) AS k FROM (${members}) m
      WHERE m.grp IS NOT NULL ORDER BY k) g`;
}

/** The per-shard due scan of eventListDue: the first $6 fireable rows of shard `s.shard` after the cursor. */
export const DUE_IN_SHARD = `SELECT e.tenant_id, e.id, e.version, e.due_at, e.shard, e.grp, e.queue FROM events e
    WHERE e.shard = s.shard AND e.state IN ${FIREABLE} AND NOT e.pull AND e.due_at <= $1
      AND (e.due_at, e.tenant_id, e.id) > ($2, $3, $4)
      AND (e.grp IS NULL OR ${IS_GROUP_HEAD})
    ORDER BY e.due_at, e.tenant_id, e.id LIMIT $6`;

/** eventListDueShards: the per-shard scans of the shards in $7, merged. */
function dueShards(): string {
  return `WITH per_shard AS MATERIALIZED (
      SELECT d.*, count(*) OVER (PARTITION BY d.shard) AS shard_rows
      FROM unnest($7::int[]) AS s(shard) CROSS JOIN LATERAL (${DUE_IN_SHARD}) d
    ), ${dueMerge()}`;
}

/** The shards with a fireable row, by a loose index scan (one probe per distinct shard; the last row is NULL). */
const SHARDS_WITH_DUE = `
      SELECT min(shard) FROM events WHERE state IN ${FIREABLE} AND NOT pull
      UNION ALL
      SELECT (SELECT min(x.shard) FROM events x WHERE x.state IN ${FIREABLE} AND NOT x.pull AND x.shard > shards.shard)
      FROM shards WHERE shards.shard IS NOT NULL
    `;

/** eventListDueAll: the per-shard scans of every shard with a fireable row, merged. */
function dueAll(): string {
  return `WITH RECURSIVE shards(shard) AS (${SHARDS_WITH_DUE}), per_shard AS MATERIALIZED (
      SELECT d.*, count(*) OVER (PARTITION BY d.shard) AS shard_rows
      FROM shards s CROSS JOIN LATERAL (${DUE_IN_SHARD}) d
      WHERE s.shard IS NOT NULL
    ), ${dueMerge()}`;
}

/**
 * The merge of the per-shard heads in `per_shard` (rows with the shard's row count): the rows
 * that are certainly the first ones overall, in order, at most $5, and whether a bound cut them.
 * A shard that returned its full $6 rows may hold more after its last row; the smallest such
 * last row is the bound, and every row up to it is complete. Without a bound, every shard was
 * drained: the rows are all there is.
 */
function dueMerge(): string {
  return `bound AS (
      SELECT due_at, tenant_id, id FROM (
        SELECT p.due_at, p.tenant_id, p.id,
          row_number() OVER (PARTITION BY p.shard ORDER BY p.due_at DESC, p.tenant_id DESC, p.id DESC) AS from_end
        FROM per_shard p WHERE p.shard_rows = $6) last_rows
      WHERE from_end = 1
      ORDER BY due_at, tenant_id, id LIMIT 1
    )
    SELECT p.tenant_id, p.id, p.version, p.due_at, p.shard, p.grp, p.queue, EXISTS (SELECT 1 FROM bound) AS bounded
    FROM per_shard p
    WHERE NOT EXISTS (SELECT 1 FROM bound)
       OR (p.due_at, p.tenant_id, p.id) <= (SELECT b.due_at, b.tenant_id, b.id FROM bound b)
    ORDER BY p.due_at, p.tenant_id, p.id LIMIT $5`;
}

/**
 * eventListDue with skip ($7 tenant ids, $8 queues, $9 due times, $10 ids; $11 the rows a shard
 * scan examines at most; shards from `shardsFrom`). Each shard's scan examines at most $11 rows
 * after the cursor and marks those of the skipped queues (from their start on); nothing of it is
 * sent but what the page needs. A shard is known up to its $6-th row not skipped, or up to its
 * $11-th row examined; the smallest such row over the shards is the bound, and the page is the
 * rows not skipped up to it (at most $5), then the bound itself when the page is not full (so the
 * caller continues after it, past the skipped rows). No bound: every shard was examined to the
 * end, and the page is all there is (`bounded`, on every row, tells which). So a flood's rows
 * cost one index step each, once, in the server, instead of being merged and sent page after page.
 */
function dueSkip(shardsFrom: string): string {
  return `${shardsFrom}, examined AS MATERIALIZED (
      SELECT d.*, row_number() OVER w AS n, count(*) FILTER (WHERE NOT d.skipped) OVER w AS kept_upto
      FROM shards s CROSS JOIN LATERAL (
        SELECT e.tenant_id, e.id, e.version, e.due_at, e.shard, e.grp, e.queue,
          EXISTS (SELECT 1 FROM unnest($7::text[], $8::text[], $9::bigint[], $10::text[]) AS m(tenant_id, queue, due_at, id)
            WHERE m.tenant_id = e.tenant_id AND m.queue = e.queue AND (e.due_at, e.id) >= (m.due_at, m.id)) AS skipped
        FROM events e
        WHERE e.shard = s.shard AND e.state IN ${FIREABLE} AND NOT e.pull AND e.due_at <= $1
          AND (e.due_at, e.tenant_id, e.id) > ($2, $3, $4)
          AND (e.grp IS NULL OR ${IS_GROUP_HEAD})
        ORDER BY e.due_at, e.tenant_id, e.id LIMIT $11) d
      WHERE s.shard IS NOT NULL
      WINDOW w AS (PARTITION BY d.shard ORDER BY d.due_at, d.tenant_id, d.id)
    ), bound AS (
      SELECT x.tenant_id, x.id, x.version, x.due_at, x.shard, x.grp, x.queue FROM examined x
      WHERE (NOT x.skipped AND x.kept_upto = $6) OR x.n = $11
      ORDER BY x.due_at, x.tenant_id, x.id LIMIT 1
    ), page AS (
      SELECT x.tenant_id, x.id, x.version, x.due_at, x.shard, x.grp, x.queue FROM examined x
      WHERE NOT x.skipped
        AND (NOT EXISTS (SELECT 1 FROM bound) OR (x.due_at, x.tenant_id, x.id) <= (SELECT b.due_at, b.tenant_id, b.id FROM bound b))
      ORDER BY x.due_at, x.tenant_id, x.id LIMIT $5
    )
    SELECT x.*, EXISTS (SELECT 1 FROM bound) AS bounded FROM (
      SELECT * FROM page
      UNION ALL
      SELECT * FROM bound b
      WHERE (SELECT count(*) FROM page) < $5
        AND NOT EXISTS (SELECT 1 FROM page p WHERE (p.due_at, p.tenant_id, p.id) = (b.due_at, b.tenant_id, b.id))
    ) x
    ORDER BY x.due_at, x.tenant_id, x.id`;
}

/** The queue of the events of the named destination $4 (core/queue.ts: `name:<destination>`). */
const DESTINATION_QUEUE = `'name:' || $4::text`;

/** Per eventList key: the range of the index a page walks (tenant_id, <key>, seq). */
const LIST_RANGES: Record<ListKey, string> = {
  tenant: 'tenant_id = $1',
  state: 'tenant_id = $1 AND state = $3::text',
  destination: `tenant_id = $1 AND queue = ${DESTINATION_QUEUE}`,
  group: 'tenant_id = $1 AND grp = $5::text',
  type: 'tenant_id = $1 AND type = $10::text AND type IS NOT NULL',
};

/** One eventList page: a bounded walk of the key's index, the given filters checked on the rows it reached. */
function listSql(key: ListKey): string {
  return `WITH walk AS MATERIALIZED (
      SELECT ${EVENT_COLUMNS} FROM events WHERE ${LIST_RANGES[key]} AND seq < $2 ORDER BY seq DESC LIMIT $8
    ), hits AS (
      SELECT * FROM walk
      WHERE ($3::text IS NULL OR state = $3::text)
        AND ($4::text IS NULL OR queue = ${DESTINATION_QUEUE})
        AND ($5::text IS NULL OR grp = $5::text)
        AND ($10::text IS NULL OR type = $10::text)
        AND ($6::bigint IS NULL OR fire_at >= $6::bigint)
        AND ($7::bigint IS NULL OR fire_at < $7::bigint)
      ORDER BY seq DESC LIMIT $9
    )
    SELECT h.*, w.examined, w.last_seq
    FROM (SELECT count(*)::int AS examined, min(seq) AS last_seq FROM walk) w LEFT JOIN hits h ON true
    ORDER BY h.seq DESC`;
}

/** `CREATE SCHEMA IF NOT EXISTS` for a schema name already checked against SCHEMA_NAME. */
export function schemaCreateSql(schema: string): string {
  return `CREATE SCHEMA IF NOT EXISTS "${schema}"`;
}

export const SQL = {
  // ($1 schema) → nothing. Serialises migrate() across processes until the transaction ends.
  migrateLock: `SELECT pg_advisory_xact_lock(hashtext('belfry.migrate'), hashtext($1))`,
  // () → nothing. Creates the migration ledger.
  migrationsTableCreate: `CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`,
  // () → { version }[]: the applied migrations.
  migrationsApplied: `SELECT version FROM schema_migrations ORDER BY version`,
  // ($1 version, $2 name) → nothing.
  migrationRecord: `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, ${NOW_MS})`,

  // () → { ok: 1 }.
  ping: `SELECT 1 AS ok`,
  // () → { now_ms }: the database clock.
  timeNow: `SELECT ${NOW_MS} AS now_ms`,

  // ($1 id, $2 name, $3 settings json, $4 createdAt, $5 signing secrets json) → nothing; throws on a duplicate id.
  tenantInsert: `INSERT INTO tenants (id, name, settings, created_at, signing_secrets) VALUES ($1, $2, $3::jsonb, $4, $5::jsonb)`,
  // ($1 id) → TenantRow | no row.
  tenantGet: `SELECT id, name, settings, created_at FROM tenants WHERE id = $1`,
  // () → TenantRow[] by creation.
  tenantList: `SELECT id, name, settings, created_at FROM tenants ORDER BY created_at, id`,
  // ($1 id, $2 settings json) → TenantRow as stored | no row when there is no such tenant.
  tenantUpdate: `UPDATE tenants SET settings = $2::jsonb WHERE id = $1 RETURNING id, name, settings, created_at`,
  // ($1 id) → { signing_secrets } | no row when there is no such tenant.
  tenantSecretsGet: `SELECT signing_secrets FROM tenants WHERE id = $1`,
  // ($1 id, $2 expected secrets json, $3 secrets json) → rowCount 1 when the stored secrets equalled
  // $2 (jsonb equality: key order and spacing do not matter) and are now $3, else 0.
  tenantSecretsSwap: `UPDATE tenants SET signing_secrets = $3::jsonb WHERE id = $1 AND signing_secrets = $2::jsonb`,
  // ($1 ids text[]) → { id, durability }[]: settings.durability (null when unset) of those tenants.
  tenantDurability: `SELECT id, settings->>'durability' AS durability FROM tenants WHERE id = ANY($1::text[])`,

  // ($1 id, $2 tenantId, $3 hash, $4 prefix, $5 createdAt, $6 revokedAt) → nothing.
  apiKeyInsert: `INSERT INTO api_keys (id, tenant_id, hash, prefix, created_at, revoked_at)
    VALUES ($1, $2, $3, $4, $5, $6)`,
  // ($1 hash) → ApiKeyRow | no row (revoked keys included; the caller checks revoked_at).
  apiKeyByHash: `SELECT id, tenant_id, hash, prefix, created_at, revoked_at FROM api_keys WHERE hash = $1`,
  // ($1 tenantId) → ApiKeyRow[] by creation.
  apiKeyList: `SELECT id, tenant_id, hash, prefix, created_at, revoked_at FROM api_keys
    WHERE tenant_id = $1 ORDER BY created_at, id`,
  // ($1 tenantId, $2 id, $3 now, $4 at) → rowCount 1 when a key live at $3 was revoked (at $4, or at
  // its earlier revocation time if it had one), else 0.
  apiKeyRevoke: `UPDATE api_keys SET revoked_at = LEAST(COALESCE(revoked_at, $4), $4)
    WHERE tenant_id = $1 AND id = $2 AND (revoked_at IS NULL OR revoked_at > $3)`,

  // ($1 tenantId, $2 name) → DestinationRow | no row.
  destinationGet: `SELECT tenant_id, name, config, secrets, created_at, updated_at FROM destinations
    WHERE tenant_id = $1 AND name = $2`,
  // ($1 tenantId) → DestinationRow[] by name.
  destinationList: `SELECT tenant_id, name, config, secrets, created_at, updated_at FROM destinations
    WHERE tenant_id = $1 ORDER BY name`,
  // ($1 tenantId, $2 name, $3 config json, $4 secrets json, $5 createdAt, $6 updatedAt) →
  // DestinationRow as stored + { created } (xmax = 0 only for a freshly inserted row). A replace
  // keeps the original created_at.
  destinationUpsert: `INSERT INTO destinations (tenant_id, name, config, secrets, created_at, updated_at)
    VALUES ($1, $2, $3::jsonb, $4::jsonb, $5, $6)
    ON CONFLICT (tenant_id, name) DO UPDATE SET
      config = excluded.config, secrets = excluded.secrets, updated_at = excluded.updated_at
    RETURNING tenant_id, name, config, secrets, created_at, updated_at, (xmax = 0) AS created`,
  // ($1 tenantId, $2 name) → rowCount 1 when deleted.
  destinationDelete: `DELETE FROM destinations WHERE tenant_id = $1 AND name = $2`,

  // ($1 tenantIds, $2 ids, $3 shards int[], $4 fireAts bigint[], $5 destinations, $6 payloads,
  //  $7 headers, $8 groups, $9 retries, $10 expireAts bigint[], $11 tags, $12 requestHashes, $14 queues,
  //  $15 types: text[] unless noted, one element per event; $13 now) → { tenant_id, id, seq }[] of the rows inserted.
  // Each new row gets its `created` transition in the same statement. seq is drawn in input
  // order (creation order), but rows are inserted in (tenant_id, id) order: two batches that
  // share ids then wait on each other's rows in the same order and never deadlock. A repeated id
  // inside the batch: its first occurrence sorts first and is inserted; the others do nothing.
  eventInsertMany: `WITH input AS (
      SELECT i.*, nextval('events_seq') AS seq
      FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[], $5::text[], $6::text[], $7::text[],
                  $8::text[], $9::text[], $10::bigint[], $11::text[], $12::text[], $14::text[], $15::text[])
        WITH ORDINALITY AS i(tenant_id, id, shard, fire_at, destination, payload, headers, grp, retry,
                             expire_at, tags, request_hash, queue, type, ord)
    ), inserted AS (
      INSERT INTO events (seq, tenant_id, id, shard, state, version, fire_at, due_at, destination, payload,
          headers, grp, retry, expire_at, tags, attempts, request_hash, created_at, updated_at, queue, type, pull)
      SELECT seq, tenant_id, id, shard, 'scheduled', 1, fire_at, fire_at, destination, payload,
          headers, grp, retry, expire_at, tags, 0, request_hash, $13, $13, queue, type,
          ${IS_PULL_DESTINATION('input.tenant_id', `CASE WHEN starts_with(input.queue, 'name:') THEN substr(input.queue, 6) END`)}
      FROM input ORDER BY tenant_id, id, ord
      ON CONFLICT (tenant_id, id) DO NOTHING
      RETURNING tenant_id, id, seq
    )
    SELECT tenant_id, id, seq FROM inserted`,
  // ($1 tenantIds text[], $2 ids text[]) → EventRow[] of those that exist (any order).
  // One primary-key probe per key (LIMIT keeps the LATERAL sub-select from being flattened).
  eventGetMany: `SELECT e.* FROM unnest($1::text[], $2::text[]) AS k(tenant_id, id)
    CROSS JOIN LATERAL (SELECT ${EVENT_COLUMNS} FROM events
      WHERE events.tenant_id = k.tenant_id AND events.id = k.id LIMIT 1) e`,
  // ($1 tenantId, $2 id) → EventRow | no row.
  eventGet: `SELECT ${EVENT_COLUMNS} FROM events WHERE tenant_id = $1 AND id = $2`,
  // () → { tenant_id, state, n }[]: every (tenant, state) that has events. A scan of every event
  // (the background sampler's, never a request's; see TX.beginLongRead).
  eventCountByTenantState: `SELECT tenant_id, state, count(*)::bigint AS n FROM events GROUP BY tenant_id, state`,
  // ($1 tenantId) → { n }: the tenant's unfinished events: three ranges of events_tenant_state_seq.
  eventCountPending: `SELECT count(*)::bigint AS n FROM events WHERE tenant_id = $1 AND state IN ${LIVE}`,

  // ($1 tenantIds text[], $2 ids text[], $3 versions int[], $4 owner, $5 leaseUntil, $6 now,
  //  $7 transition detail json, $8 fence boolean) → (EventRow + ord)[] of the events claimed, in
  //  ref order. Claims each ref still fireable at exactly that version and (if grouped) its
  //  group's head, and, when $8, in a shard the shard map gives to $4 (read in this statement's
  //  snapshot: a map committed later fences every later claim). Rows locked by another claimer
  //  are skipped, never waited for. Each claim appends its transition, lateness = now - due_at.
  //  The lookup is a LATERAL sub-select with FOR UPDATE, which the planner never flattens into a
  //  join: each ref is one primary-key probe whatever the statistics say (a fresh table, not yet
  //  analyzed, otherwise invites a hash join over every fireable row). The UPDATE then finds the
  //  rows it locked by ctid (a TID scan): a locked row cannot move before the statement ends.
  eventClaim: `WITH refs AS (
      SELECT DISTINCT ON (tenant_id, id, version) tenant_id, id, version, ord
      FROM unnest($1::text[], $2::text[], $3::int[]) WITH ORDINALITY AS r(tenant_id, id, version, ord)
      ORDER BY tenant_id, id, version, ord
    ), claimable AS (
      SELECT l.row_id, l.from_state, r.ord
      FROM refs r CROSS JOIN LATERAL (
        SELECT e.ctid AS row_id, e.state AS from_state FROM events e
        WHERE e.tenant_id = r.tenant_id AND e.id = r.id AND e.version = r.version AND ${stateIn('e', FIREABLE)}
          AND NOT e.pull AND (e.grp IS NULL OR ${IS_GROUP_HEAD})
          AND (NOT $8::boolean OR EXISTS (
            SELECT 1 FROM shard_assignments s WHERE s.shard = e.shard AND s.node_id = $4))
        FOR UPDATE SKIP LOCKED
      ) l
    ), claimed AS (
      UPDATE events e SET state = ${SQL_STATE.executing}, version = e.version + 1, attempts = e.attempts + 1,
          lease_owner = $4, lease_until = $5, updated_at = $6
      FROM claimable c
      WHERE e.ctid = c.row_id
      RETURNING ${EVENT_COLUMNS_E}, c.from_state, c.ord
    ), traced AS (
      INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, from_state, to_state, attempt, lateness_ms, detail)
      SELECT shard, tenant_id, id, version, $6, 'state', from_state, 'executing', attempts, $6 - due_at, $7 FROM claimed
    )
    SELECT * FROM claimed ORDER BY ord`,

  // ($1 tenantIds, $2 ids, $3 versions int[], $4 owners, $5 toStates, $6 retryAts bigint[] (null
  //  elements unless awaiting_retry), $7 statuses int[], $8 errors, $9 durationsMs bigint[],
  //  $10 now) → { ord }[] of the outcomes that applied. An outcome applies when its event is still
  //  executing at that version under that owner; each appends its transition. The batch must not
  //  name one event twice (UPDATE ... FROM would apply one of them, unspecified which): the caller
  //  splits repeats into later rounds. Each outcome is one primary-key probe (LATERAL ... FOR
  //  UPDATE, as in eventClaim) that waits for a row another transaction holds (a rescue, a
  //  cancel) and re-checks it; the UPDATE then changes exactly the rows it locked (by ctid).
  eventRecordAttempts: `WITH target AS (
      SELECT l.row_id, o.to_state, o.retry_at, o.status, o.error, o.duration_ms, o.ord
      FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::bigint[], $7::int[], $8::text[],
                  $9::bigint[]) WITH ORDINALITY AS o(tenant_id, id, version, owner, to_state, retry_at, status, error,
                                                     duration_ms, ord)
      CROSS JOIN LATERAL (
        SELECT e.ctid AS row_id FROM events e
        WHERE e.tenant_id = o.tenant_id AND e.id = o.id AND e.version = o.version
          AND ${stateIn('e', ATTEMPTING)} AND e.lease_owner = o.owner
        FOR UPDATE
      ) l
    ), done AS (
      UPDATE events e SET state = t.to_state, due_at = coalesce(t.retry_at, e.due_at), last_status = t.status,
          last_error = t.error, updated_at = $10, version = e.version + 1, lease_owner = NULL, lease_until = NULL
      FROM target t
      WHERE e.ctid = t.row_id
      RETURNING e.tenant_id, e.id, e.shard, e.version, e.attempts, t.to_state, t.retry_at, t.status, t.error, t.duration_ms, t.ord
    ), traced AS (
      INSERT INTO transitions (shard, ${TRANSITION_COLUMNS})
      SELECT shard, tenant_id, id, version, $10, 'state', 'executing', to_state, attempts, status, error, duration_ms, NULL,
        CASE WHEN retry_at IS NULL THEN NULL ELSE '{"retryAt":' || retry_at || '}' END
      FROM done
    )
    SELECT ord FROM done`,

  // ($1 untilMs, $2 afterDueAt, $3 afterTenantId, $4 afterId, $5 limit, $6 perShardLimit,
  //  $7 shards int[]) → (DueRefRow + bounded)[]: in (due_at, tenant_id, id) order, fireable, due by
  //  untilMs, after the cursor, group heads only, in those shards — the first ones overall, at
  //  most $5 (see DUE_MERGE; `bounded` false means nothing else is due). Each shard is one range
  //  scan of events_due (shard, due_at, tenant_id, id) that stops after $6 rows, so a page costs
  //  about shards x $6 index entries, not shards x $5, however large the backlog.
  eventListDueShards: dueShards(),
  // eventListDue with skip over the shards in $12 (see dueSkip for $1-$11).
  eventListDueShardsSkip: dueSkip(`WITH shards(shard) AS (SELECT unnest($12::int[]))`),
  // ($1 untilMs, $2 afterDueAt, $3 afterTenantId, $4 afterId, $5 limit, $6 perShardLimit) → as
  // eventListDueShards, over every shard that has a fireable row: the shards are found by a loose
  // index scan of events_due (one index probe per distinct shard).
  eventListDueAll: dueAll(),
  // eventListDue with skip over every shard with a fireable row (see dueSkip).
  eventListDueAllSkip: dueSkip(`WITH RECURSIVE shards(shard) AS (${SHARDS_WITH_DUE})`),
  // ($1 tenantId, $2 queue, $3 untilMs, $4 fromDueAt, $5 fromId, $6 limit, $7 shards int[] or NULL
  //  for all) → DueRefRow[]: one queue's fireable rows (group heads only) with (due_at, id) ≥ the
  //  start, in that order. A range scan of events_queue_due: never another queue's rows. The
  //  shard test is spelled `shard + 0` so the planner cannot serve it from events_due (without
  //  statistics it preferred that index, which reads every queue's rows of the owned shards).
  eventListDueQueue: `SELECT e.tenant_id, e.id, e.version, e.due_at, e.shard, e.grp, e.queue FROM events e
    WHERE e.tenant_id = $1 AND e.queue = $2 AND e.state IN ${FIREABLE} AND NOT e.pull
      AND e.due_at <= $3 AND e.due_at >= $4 AND (e.due_at, e.id) >= ($4, $5)
      AND ($7::int[] IS NULL OR (e.shard + 0) = ANY ($7::int[]))
      AND (e.grp IS NULL OR ${IS_GROUP_HEAD})
    ORDER BY e.due_at, e.id LIMIT $6`,
  // ($1 tenantIds text[], $2 ids text[]) → one row: takes, in key order, the advisory lock of the
  //  group of every grouped event among the refs (see IS_GROUP_HEAD); eventClaim follows in the same
  //  transaction.
  eventGroupLock: groupLocks(`SELECT e.tenant_id, e.grp FROM unnest($1::text[], $2::text[]) AS r(tenant_id, id)
      JOIN events e ON e.tenant_id = r.tenant_id AND e.id = r.id`),
  // ($1 tenantId, $2 group) → (DueRefRow + state + pull) of the group's head (see IS_GROUP_HEAD):
  // its executing member, else its first started member, else its first live member by
  // (fire_at, seq); or no row. One probe of events_group_started, then of events_group_live.
  eventGroupFirst: `SELECT tenant_id, id, version, due_at, shard, grp, queue, state, pull FROM (
      (SELECT tenant_id, id, version, due_at, shard, grp, queue, state, pull, 0 AS rank FROM events
        WHERE tenant_id = $1 AND grp = $2 AND state IN ${STARTED}
        ORDER BY state = ${SQL_STATE.executing} DESC, fire_at, seq LIMIT 1)
      UNION ALL
      (SELECT tenant_id, id, version, due_at, shard, grp, queue, state, pull, 1 AS rank FROM events
        WHERE tenant_id = $1 AND grp = $2 AND state IN ${LIVE}
        ORDER BY fire_at, seq LIMIT 1)) h
    ORDER BY rank LIMIT 1`,

  // ($1 leaseExpiredBefore, $2 notOwnedBy|null, $3 limit, $4 now, $5 heldBy|null) →
  // (DueRefRow + attempts)[] of the executing events made awaiting_retry (due now): those whose
  // lease ended by $1 and by the database clock (LEASE_EXPIRY_BOUND: the event's own, from its
  // claim, and its owner's in claim_leases, if any), or,
  // when $2 is given, held by another owner, or, when $5 is given, held by $5; oldest lease
  // first, rows locked by others skipped. Each appends its transition naming the reason and the
  // old owner.
  eventRescue: `WITH bound AS (SELECT ${LEASE_EXPIRY_BOUND} AS t), candidates AS (
      SELECT e.ctid AS row_id, e.lease_owner, e.lease_until, (e.lease_until < b.t) AS expired FROM events e CROSS JOIN bound b
      WHERE e.state = ${SQL_STATE.executing} AND NOT e.pull
        AND ((e.lease_until < b.t AND NOT EXISTS (
               SELECT 1 FROM claim_leases c WHERE c.owner = e.lease_owner AND c.lease_until >= b.t))
             OR ($2::text IS NOT NULL AND e.lease_owner IS DISTINCT FROM $2::text)
             OR ($5::text IS NOT NULL AND e.lease_owner = $5::text))
      ORDER BY e.lease_until LIMIT $3
      FOR UPDATE OF e SKIP LOCKED
    ), rescued AS (
      UPDATE events e SET state = ${SQL_STATE.awaiting_retry}, due_at = $4, updated_at = $4, version = e.version + 1,
          lease_owner = NULL, lease_until = NULL
      FROM candidates c
      WHERE e.ctid = c.row_id
      RETURNING e.tenant_id, e.id, e.version, e.due_at, e.shard, e.grp, e.queue, e.attempts, c.expired,
        c.lease_owner AS old_owner, c.lease_until AS old_lease_until
    ), traced AS (
      INSERT INTO transitions (shard, ${TRANSITION_COLUMNS})
      SELECT shard, tenant_id, id, version, $4, 'state', 'executing', 'awaiting_retry', attempts, NULL, NULL, NULL, NULL,
        json_build_object('reason', CASE WHEN expired THEN 'lease expired' ELSE 'owner gone' END,
                          'owner', old_owner)::text
      FROM rescued
    )
    SELECT tenant_id, id, version, due_at, shard, grp, queue FROM rescued ORDER BY old_lease_until, tenant_id, id`,

  // ($1 owners text[], $2 nodeTtlMs, $3 limit, $4 now) → (DueRefRow)[] of the executing events
  // made awaiting_retry (due $4) because their owner is one of $1 and its node row's heartbeat
  // is at least $2 old by the database clock (a node without a row is left alone); oldest lease
  // first, rows locked by others skipped. Each appends its transition, reason 'owner dead'.
  // Runs after leaderCheckForShare in the same transaction (see PostgresStore.eventRescueDead).
  // Served by events_executing: a scan of the executing rows (the deliveries in flight).
  eventRescueDead: `WITH dead AS (
      SELECT n.id FROM nodes n
      WHERE n.id = ANY($1::text[]) AND n.heartbeat_at <= ${NOW_MS} - $2::bigint
    ), candidates AS (
      SELECT e.ctid AS row_id, e.lease_owner, e.lease_until FROM events e
      WHERE e.state = ${SQL_STATE.executing} AND NOT e.pull AND e.lease_owner IN (SELECT id FROM dead)
      ORDER BY e.lease_until LIMIT $3
      FOR UPDATE OF e SKIP LOCKED
    ), rescued AS (
      UPDATE events e SET state = ${SQL_STATE.awaiting_retry}, due_at = $4, updated_at = $4, version = e.version + 1,
          lease_owner = NULL, lease_until = NULL
      FROM candidates c
      WHERE e.ctid = c.row_id
      RETURNING e.tenant_id, e.id, e.version, e.due_at, e.shard, e.grp, e.queue, e.attempts,
        c.lease_owner AS old_owner, c.lease_until AS old_lease_until
    ), traced AS (
      INSERT INTO transitions (shard, ${TRANSITION_COLUMNS})
      SELECT shard, tenant_id, id, version, $4, 'state', 'executing', 'awaiting_retry', attempts, NULL, NULL, NULL, NULL,
        json_build_object('reason', 'owner dead', 'owner', old_owner)::text
      FROM rescued
    )
    SELECT tenant_id, id, version, due_at, shard, grp, queue FROM rescued ORDER BY old_lease_until, tenant_id, id`,

  // ($1 now, $2 tenantId, $3 id, $4 version, $5 fromState, $6 detail json|null, $7 reason|null) →
  // EventRow after the cancel (lastError = $7 when given), or no row when not cancelable at that
  // version; appends the `state` transition.
  eventCancel: `WITH changed AS (
      UPDATE events SET state = ${SQL_STATE.canceled}, version = version + 1, updated_at = $1, lease_owner = NULL, lease_until = NULL,
          last_error = coalesce($7::text, last_error)
      WHERE tenant_id = $2 AND id = $3 AND version = $4 AND ${stateIn('events', CANCELABLE)}
      RETURNING ${EVENT_COLUMNS}
    ), traced AS (
      INSERT INTO transitions (shard, ${TRANSITION_COLUMNS})
      SELECT shard, tenant_id, id, version, $1, 'state', $5::text, 'canceled', attempts, NULL, NULL, NULL, NULL, $6::text FROM changed
    )
    SELECT * FROM changed`,
  // ($1 now, $2 tenantId, $3 id, $4 version, $5 fromState, $6 detail json) → EventRow after the
  // replay (scheduled, due now, attempts 0, last status and error cleared), or no row when not
  // replayable at that version; appends the `replayed` transition.
  eventReplay: `WITH changed AS (
      UPDATE events SET state = ${SQL_STATE.scheduled}, due_at = $1, attempts = 0, last_status = NULL, last_error = NULL,
          version = version + 1, updated_at = $1, lease_owner = NULL, lease_until = NULL,
          pull = ${IS_PULL_DESTINATION('events.tenant_id', `events.destination::jsonb ->> 'name'`)}
      WHERE tenant_id = $2 AND id = $3 AND version = $4 AND state IN ${REPLAYABLE}
      RETURNING ${EVENT_COLUMNS}
    ), traced AS (
      INSERT INTO transitions (shard, ${TRANSITION_COLUMNS})
      SELECT shard, tenant_id, id, version, $1, 'replayed', $5::text, 'scheduled', 0, NULL, NULL, NULL, NULL, $6 FROM changed
    )
    SELECT * FROM changed`,
  // ($1 fireAt, $2 dueAt, $3 payload, $4 headers json, $5 destination json, $6 expireAt, $7 requestHash,
  //  $8 now, $9 tenantId, $10 id, $11 version, $12 detail json, $13 queue, $14 type) → EventRow after the edit, or no
  //  row when not scheduled at that version; appends the `updated` transition.
  eventEdit: `WITH changed AS (
      UPDATE events SET fire_at = $1, due_at = $2, payload = $3, headers = $4, destination = $5::text, expire_at = $6,
          request_hash = $7, version = version + 1, updated_at = $8, queue = $13, type = $14,
          pull = ${IS_PULL_DESTINATION('events.tenant_id', `$5::text::jsonb ->> 'name'`)}
      WHERE tenant_id = $9 AND id = $10 AND version = $11 AND ${stateIn('events', EDITABLE)}
      RETURNING ${EVENT_COLUMNS}
    ), traced AS (
      INSERT INTO transitions (shard, ${TRANSITION_COLUMNS})
      SELECT shard, tenant_id, id, version, $8, 'updated', 'scheduled', 'scheduled', attempts, NULL, NULL, NULL, NULL, $12
      FROM changed
    )
    SELECT * FROM changed`,

  // Pull delivery (docs/pull.md). pullClaimAny ($1 tenantId, $2 queue, $3 now, $4 examine, $5 max,
  //  $6 leaseUntil, $7 receipt, $8 detail json) → EventRow[] claimed, in due order: of the first $4
  //  fireable rows of the queue due by $3 (a range scan of events_queue_due), see PULL_CLAIM_REST.
  pullClaimAny: `WITH page AS MATERIALIZED (${PULL_PAGE_ANY}), ${PULL_CLAIM_REST}`,
  // pullClaimTyped: as pullClaimAny, plus $9 types text[]: the page is the first $4 rows of each
  //  type (a range scan of events_pull_type_due per type).
  pullClaimTyped: `WITH page AS MATERIALIZED (${PULL_PAGE_TYPED('$9')}), ${PULL_CLAIM_REST}`,
  // ($1 tenantId, $2 queue, $3 now, $4 examine) → one row: takes, in key order, the advisory lock
  //  of every group with a member in pullClaimAny's page (see IS_GROUP_HEAD); the claim follows in
  //  the same transaction.
  pullGroupLockAny: groupLocks(`SELECT e.tenant_id, e.grp FROM (${PULL_PAGE_ANY}) p
      JOIN events e ON e.tenant_id = p.tenant_id AND e.id = p.id`),
  // pullGroupLockTyped: as pullGroupLockAny, plus $5 types text[] (pullClaimTyped's page).
  pullGroupLockTyped: groupLocks(`SELECT e.tenant_id, e.grp FROM (${PULL_PAGE_TYPED('$5')}) p
      JOIN events e ON e.tenant_id = p.tenant_id AND e.id = p.id`),
  // ($1 tenantId, $2 id, $3 receipt, $4 attempts|null, $5 toState, $6 retryAt|null, $7 error|null,
  //  $8 now, $9 detail json) → EventRow after the ack, nack or expiry, or no row unless the event is
  //  a pull event executing under receipt $3 (at attempt $4); appends the `state` transition.
  pullSettle: `WITH changed AS (
      UPDATE events SET state = $5::text, due_at = coalesce($6::bigint, due_at), last_error = $7::text, updated_at = $8,
          version = version + 1, lease_owner = NULL, lease_until = NULL, receipt = NULL
      WHERE tenant_id = $1 AND id = $2 AND ${stateIn('events', ATTEMPTING)} AND pull AND receipt = $3
        AND ($4::int IS NULL OR attempts = $4::int)
      RETURNING ${EVENT_COLUMNS}
    ), traced AS (
      INSERT INTO transitions (shard, ${TRANSITION_COLUMNS})
      SELECT shard, tenant_id, id, version, $8, 'state', 'executing', $5::text, attempts, NULL, $7::text, NULL, NULL, $9 FROM changed
    )
    SELECT * FROM changed`,
  // ($1 tenantIds, $2 ids, $3 receipts, $4 attempts int[] (null elements: any), $5 toStates,
  //  $6 retryAts bigint[] (null elements unless awaiting_retry), $7 errors, $8 nows bigint[],
  //  $9 details (json text)) → (EventRow + ord)[] of the settles that applied: pullSettle for many
  //  events in one statement. The batch never names one event twice (checkPullSettleMany). Each
  //  is one primary-key probe (LATERAL ... FOR UPDATE, as in eventRecordAttempts); the UPDATE then
  //  changes exactly the rows it locked (by ctid).
  pullSettleMany: `WITH target AS (
      SELECT l.row_id, s.to_state, s.retry_at, s.error, s.now, s.detail, s.ord
      FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::bigint[], $7::text[], $8::bigint[],
                  $9::text[]) WITH ORDINALITY AS s(tenant_id, id, receipt, attempts, to_state, retry_at, error, now,
                                                   detail, ord)
      CROSS JOIN LATERAL (
        SELECT e.ctid AS row_id FROM events e
        WHERE e.tenant_id = s.tenant_id AND e.id = s.id AND ${stateIn('e', ATTEMPTING)} AND e.pull
          AND e.receipt = s.receipt AND (s.attempts IS NULL OR e.attempts = s.attempts)
        FOR UPDATE
      ) l
    ), changed AS (
      UPDATE events e SET state = t.to_state, due_at = coalesce(t.retry_at, e.due_at), last_error = t.error,
          updated_at = t.now, version = e.version + 1, lease_owner = NULL, lease_until = NULL, receipt = NULL
      FROM target t
      WHERE e.ctid = t.row_id
      RETURNING ${EVENT_COLUMNS_E}, t.now AS settled_at, t.error AS settle_error, t.detail AS settle_detail, t.ord
    ), traced AS (
      INSERT INTO transitions (shard, ${TRANSITION_COLUMNS})
      SELECT shard, tenant_id, id, version, settled_at, 'state', 'executing', state, attempts, NULL, settle_error, NULL, NULL,
        settle_detail FROM changed
    )
    SELECT * FROM changed ORDER BY ord`,
  // ($1 tenantId, $2 id, $3 receipt, $4 leaseUntil, $5 now) → EventRow after the extend (the lease
  //  never shortened), or no row unless executing under receipt $3; appends a transition.
  pullExtend: `WITH changed AS (
      UPDATE events SET lease_until = GREATEST(lease_until, $4::bigint), updated_at = $5, version = version + 1
      WHERE tenant_id = $1 AND id = $2 AND ${stateIn('events', ATTEMPTING)} AND pull AND receipt = $3
      RETURNING ${EVENT_COLUMNS}
    ), traced AS (
      INSERT INTO transitions (shard, ${TRANSITION_COLUMNS})
      SELECT shard, tenant_id, id, version, $5, 'state', 'executing', 'executing', attempts, NULL, NULL, NULL, NULL,
        json_build_object('pull', 'extend', 'visibleUntil', lease_until)::text FROM changed
    )
    SELECT * FROM changed`,
  // ($1 now, $2 limit) → (EventRow + receipt)[]: claimed pull events whose visibility timeout ended
  //  before $1 and before the database clock's now (LEASE_EXPIRY_BOUND), the oldest first (events_pull_leases).
  pullExpired: `SELECT ${EVENT_COLUMNS}, receipt FROM events
    WHERE state = ${SQL_STATE.executing} AND pull AND lease_until < (SELECT ${LEASE_EXPIRY_BOUND})
    ORDER BY lease_until LIMIT $2`,
  // ($1 tenantId, $2 queue) → { due_at } of the queue's first fireable row, or no row (events_queue_due).
  pullNextDue: `SELECT due_at FROM events WHERE tenant_id = $1 AND queue = $2 AND state IN ${FIREABLE}
    ORDER BY due_at LIMIT 1`,

  // ($1 tenantId, $2 state, $3 finishedBefore, $4 limit) → { events, transitions }: deletes at most
  // $4 of the tenant's events in terminal state $2 with updated_at < $3, oldest first, and their
  // whole traces. The candidates are a range scan of events_terminal (the `state IN` term spelled
  // as its predicate), locked SKIP LOCKED: a row a replay or another cleaner holds is left for the
  // next pass. The DELETE checks state and age again on the locked row, so an event replayed in
  // between is never deleted. The traces go by the primary key of transitions, one ScalarArrayOp
  // probe per event (an array, not a join, so no plan may hash-join the whole table).
  eventDeleteTerminal: `WITH doomed AS (
      SELECT ctid AS row_id FROM events
      WHERE tenant_id = $1 AND state = $2::text AND state IN ${TERMINAL} AND updated_at < $3::bigint
      ORDER BY updated_at LIMIT $4
      FOR UPDATE SKIP LOCKED
    ), gone AS (
      DELETE FROM events e USING doomed d
      WHERE e.ctid = d.row_id AND e.state = $2::text AND e.updated_at < $3::bigint
      RETURNING e.id
    ), trace AS (
      DELETE FROM transitions t
      WHERE t.tenant_id = $1 AND t.event_id = ANY (ARRAY(SELECT id FROM gone))
      RETURNING 1
    )
    SELECT (SELECT count(*) FROM gone)::int AS events, (SELECT count(*) FROM trace)::int AS transitions`,

  // eventList, one statement per index a page may walk (see store/event-list-plan.ts):
  // ($1 tenantId, $2 beforeSeq, $3 state|null, $4 destination name|null, $5 group|null,
  //  $6 fromMs|null, $7 toMs|null, $8 examine, $9 limit, $10 type|null) → (EventRow | all nulls) + { examined,
  //  last_seq }: of the first $8 entries of the key's index below $2, the rows matching every given
  //  filter, newest first, at most $9; every row also says how many entries the walk covered and
  //  the lowest seq among them (where the next page starts when the walk was cut). One row of nulls
  //  and the walk's figures when nothing matched. The walk is one LIMITed backward range scan.
  eventListByTenant: listSql('tenant'),
  eventListByState: listSql('state'),
  eventListByDestination: listSql('destination'),
  eventListByGroup: listSql('group'),
  eventListByType: listSql('type'),

  // ($1 tenantId, $2 fromMs, $3 toMs, $4 bucketMs, $5 by) → { bucket, key, n }[]: the tenant's
  // scheduled events with $2 ≤ due_at < $3 per bucket ((due_at - $2) / $4) and, by $5, per queue
  // or tenant. One index-only range scan of events_forecast (the scheduled state spelled as its
  // predicate).
  eventForecastTenant: `SELECT ((due_at - $2::bigint) / $4::bigint)::int AS bucket,
      CASE $5::text WHEN 'destination' THEN queue WHEN 'tenant' THEN tenant_id END AS key, count(*)::int AS n
    FROM events
    WHERE tenant_id = $1 AND state = ${SQL_STATE.scheduled} AND due_at >= $2::bigint AND due_at < $3::bigint
    GROUP BY 1, 2`,
  // ($1 fromMs, $2 toMs, $3 bucketMs, $4 by) → as eventForecastTenant over every tenant: per
  // tenant (LATERAL, so the planner cannot turn it into one scan of the whole index) one range scan.
  eventForecastAll: `SELECT ((e.due_at - $1::bigint) / $3::bigint)::int AS bucket,
      CASE $4::text WHEN 'destination' THEN e.queue WHEN 'tenant' THEN t.id END AS key, count(*)::int AS n
    FROM tenants t CROSS JOIN LATERAL (
      SELECT due_at, queue FROM events
      WHERE tenant_id = t.id AND state = ${SQL_STATE.scheduled} AND due_at >= $1::bigint AND due_at < $2::bigint) e
    GROUP BY 1, 2`,

  // ($1 tenantId, $2 eventId, $3 afterSeq, $4 limit) → TransitionRow[] in trace order: the stored
  // transitions and the `created` one (seq 1), read from the event row. An insert stores no
  // transition (a heap tuple, a key and their WAL per event).
  transitionList: `SELECT ${TRANSITION_COLUMNS} FROM transitions
    WHERE tenant_id = $1 AND event_id = $2 AND seq > $3
    UNION ALL
    SELECT tenant_id, id, 1, created_at, 'created', NULL, 'scheduled', 0, NULL, NULL, NULL, NULL, NULL
    FROM events WHERE tenant_id = $1 AND id = $2 AND $3::int < 1
    ORDER BY seq LIMIT $4`,

  // () → LeaderLeaseRow | no row: the lease as stored, expired or not.
  leaderGet: `SELECT node_id, epoch, expires_at FROM leader_lease WHERE id = 1`,
  // ($1 nodeId, $2 leaseMs) → LeaderLeaseRow when $1 holds the lease afterwards, else no row.
  // Takes a free or expired lease (epoch + 1; 1 for the first), extends an unexpired one held by
  // $1 (same epoch); expiry = database clock + leaseMs. The row lock of the upsert serialises
  // concurrent elections: the loser sees the winner's committed row and gets no row.
  // (excluded.expires_at - $2 is this statement's clock reading.)
  // (VALUES, not INSERT ... SELECT: Citus 13.2 refuses the latter's parameters on a reference table.)
  leaderElect: `INSERT INTO leader_lease AS l (id, node_id, epoch, expires_at)
    VALUES (1, $1, 1, ${NOW_MS} + $2::bigint)
    ON CONFLICT (id) DO UPDATE SET
      epoch = CASE WHEN l.expires_at > excluded.expires_at - $2::bigint THEN l.epoch ELSE l.epoch + 1 END,
      node_id = excluded.node_id, expires_at = excluded.expires_at
    WHERE l.expires_at <= excluded.expires_at - $2::bigint OR l.node_id = $1
    RETURNING node_id, epoch, expires_at`,
  // ($1 nodeId, $2 epoch) → nothing. When $1 holds the lease at $2, it expires now.
  // (The statement's start by the database clock, not clock_timestamp(): Citus refuses a volatile
  // function in an UPDATE of a reference table.)
  leaderResign: `UPDATE leader_lease SET expires_at = least(expires_at, floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint)
    WHERE id = 1 AND node_id = $1 AND epoch = $2`,
  // ($1 leaderId, $2 epoch) → { ok } when ($1, $2) is the unexpired lease, else no row. Takes a
  // share lock on the lease row, so no election can change it before the transaction ends.
  leaderCheckForShare: `SELECT 1 AS ok FROM leader_lease
    WHERE id = 1 AND node_id = $1 AND epoch = $2 AND expires_at > ${NOW_MS}
    FOR SHARE`,

  // ($1 id, $2 meta json) → { heartbeat_at }: the database clock it wrote. Registers a node
  // (started_at = heartbeat_at = now) or refreshes its heartbeat and meta (started_at kept).
  nodeHeartbeat: `INSERT INTO nodes (id, started_at, heartbeat_at, meta)
    SELECT $1, t.now_ms, t.now_ms, $2::jsonb FROM (SELECT ${NOW_MS} AS now_ms) t
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, meta = excluded.meta
    RETURNING heartbeat_at`,
  // () → (NodeRow + now_ms)[] by id; now_ms is the database clock, for the age.
  nodeList: `SELECT id, started_at, heartbeat_at, meta, ${NOW_MS} AS now_ms FROM nodes ORDER BY id`,
  // ($1 id) → nothing.
  nodeDelete: `DELETE FROM nodes WHERE id = $1`,

  // ($1 owner, $2 leaseUntil) → nothing: $1's claim lease ends at $2 or later (never earlier).
  // One row per owner: the claimed events themselves are not written (see 003_claim_leases).
  // Leases that ended a day before $2 are dropped on the way: their events are past rescue.
  claimLeaseRenew: `WITH gone AS (
      DELETE FROM claim_leases WHERE lease_until < $2::bigint - 86400000 AND owner <> $1
    )
    INSERT INTO claim_leases (owner, lease_until) VALUES ($1, $2::bigint)
    ON CONFLICT (owner) DO UPDATE SET lease_until = GREATEST(claim_leases.lease_until, excluded.lease_until)`,
  // ($1 now, $2 limit) → { shard, due_events, oldest_due_at }[]: fireable rows due by $1, per
  // shard (served by the partial index events_due, shard first).
  shardLag: `SELECT shard, count(*)::int AS due_events, min(due_at) AS oldest_due_at FROM events
    WHERE state IN ${FIREABLE} AND NOT pull AND due_at <= $1
    GROUP BY shard ORDER BY oldest_due_at LIMIT $2`,

  // () → nothing. Empties the shard map (shardAssign writes the whole map again after it).
  shardClear: `DELETE FROM shard_assignments`,
  // ($1 shards int[], $2 nodeIds text[], $3 epoch) → nothing.
  shardInsertMany: `INSERT INTO shard_assignments (shard, node_id, epoch)
    SELECT shard, node_id, $3 FROM unnest($1::int[], $2::text[]) AS a(shard, node_id)`,
  // () → ShardAssignmentRow[] by shard.
  shardList: `SELECT shard, node_id, epoch FROM shard_assignments ORDER BY shard`,
  // (shardCount as text) → nothing: stores the shard count unless one is stored.
  shardCountInsert: `INSERT INTO store_settings (name, value) VALUES ('shard_count', $1) ON CONFLICT (name) DO NOTHING`,
  // () → { value } | none: the stored shard count.
  shardCountGet: `SELECT value FROM store_settings WHERE name = 'shard_count'`,
} as const;

export type QueryName = keyof typeof SQL;

/** Statements run outside the prepared set: transaction control and the durability switch. */
export const TX = {
  // () → nothing.
  begin: `BEGIN`,
  // () → nothing. Opens a transaction whose commit does not wait for the WAL flush (relaxed tenants).
  beginRelaxed: `BEGIN; SET LOCAL synchronous_commit = off`,
  // () → nothing. Opens a read-only transaction whose plans walk an index in its order rather than
  // read every match and sort it (eventList): without statistics (a table never analyzed, or
  // autovacuum off) the planner estimates a tenant at 0.5% of the table, and below about a million
  // rows it read a whole single-tenant table through a bitmap and sorted it to return 1,000 rows.
  // A disabled plan node costs 1e10, far above jit_above_cost: without jit = off, every such
  // statement spent 200-300 ms compiling itself.
  beginOrderedWalk: `BEGIN READ ONLY; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off; SET LOCAL jit = off`,
  // () → nothing. Opens a read-only transaction for a read whose time grows with the table (the
  // background counts): its own bound instead of the connection's statement timeout, and no
  // parallel workers, so a background count takes one core of the server, never all of them.
  beginLongRead: `BEGIN READ ONLY; SET LOCAL statement_timeout = 300000; SET LOCAL max_parallel_workers_per_gather = 0`,
  // () → nothing. Lifts the connection's statement timeout for this transaction (migrations may build indexes).
  noStatementTimeout: `SET LOCAL statement_timeout = 0`,
  commit: `COMMIT`,
  rollback: `ROLLBACK`,
} as const;
