/**
 * Every SQL statement of the SQLite backend, each under a comment naming its parameters and what
 * it returns. Statements are prepared once per connection by `prepareQueries`.
 *
 * Parameters are positional (`?`) on the hot paths (insert, claim, record), where a driver binds
 * values faster than an object's properties, and named (`@x`) elsewhere for readability.
 */
import type { Connection } from './driver.ts';
import { SQL_STATE, SQL_STATE_LISTS } from '../core/state-lists.ts';
import type { ListKey } from '../event-list-plan.ts';
import type {
  ApiKeyRow,
  DueRefRow,
  EventRow,
  LeaderLeaseRow,
  ListWalkRow,
  ShardAssignmentRow,
  TransitionRow,
} from '../core/rows.ts';
import { WRITER_AUTOCHECKPOINT_PAGES } from './checkpointer.ts';
import type { DestinationRow, EventTuple, NodeRow, RescueCandidateRow, TenantRow } from './rows.ts';

/** Connection settings, applied before anything else. */
export const PRAGMAS = [
  // Readers never block the single writer; the WAL is fsynced at every commit (synchronous=FULL),
  // so a resolved write is on disk.
  'journal_mode = WAL',
  'synchronous = FULL',
  'busy_timeout = 5000',
  'foreign_keys = ON',
  // 8 MiB page cache. Bigger costs every commit: when a b-tree page splits, SQLite renumbers pages
  // through the pending-byte page number (262145), so the commit's cache truncation scans the
  // whole hash table, whose size follows the cache. Measured with 64 MiB: 4 % of the node's CPU
  // while firing (CPU per recorded outcome in batches of 50: 11.4 µs at 64 MiB, 7.3 µs at 2 MiB);
  // reads of a 600,000-event store were no slower at 8 MiB (the OS page cache holds the file).
  'cache_size = -8192',
  'temp_store = MEMORY',
  // Keeps the WAL file from growing without bound after a burst.
  'journal_size_limit = 67108864',
];

/**
 * The state lists of the statements below, built from core/event.ts's transition table in the
 * exact spelling of the partial indexes (so the planner uses them): LIVE (not terminal), FIREABLE,
 * STARTED (a group member that has started delivery and holds its group), TERMINAL, and the
 * states cancel, replay, an edit and an attempt's outcome apply from.
 */
const { LIVE, FIREABLE, STARTED, TERMINAL, REPLAYABLE, CANCELABLE, EDITABLE } = SQL_STATE_LISTS;

/** The columns of an EventRow, in order (also the order of an EventTuple). */
export const EVENT_COLUMNS = `seq, tenant_id, id, shard, state, version, fire_at, due_at, destination, payload,
  headers, grp, retry, expire_at, tags, attempts, last_status, last_error, request_hash,
  created_at, updated_at, lease_owner, lease_until, queue, type`;

/**
 * True when row `e` (a fireable grouped event) is its group's head: the one member that may be
 * claimed. A member that has started delivery (executing, or awaiting_retry after an attempt)
 * holds its group until it is terminal, whatever the fireAt of members created or edited
 * meanwhile; when none has started, the head is the first live member by (fire_at, seq). Served
 * by events_group_started (the started members, normally at most one) and events_group_live.
 * Claims run on the one writer, check and update in one transaction, so no two see the same head.
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
 * eventListDue over all shards or those in @shards. With `skip` (@skip: a JSON array of
 * [tenantId, queue, dueAt, id]): the same page of rows examined, less the rows of those queues from
 * (dueAt, id) on but the last row examined, which is always returned (so the caller's cursor moves
 * past skipped rows).
 */
function dueList(shards: boolean, skip: boolean): string {
  const page = `SELECT e.tenant_id, e.id, e.version, e.due_at, e.shard, e.grp, e.queue${
    skip
      ? `,
      EXISTS (SELECT 1 FROM json_each(@skip) m
        WHERE m.value ->> 0 = e.tenant_id AND m.value ->> 1 = e.queue AND (e.due_at, e.id) >= (m.value ->> 2, m.value ->> 3)) AS skipped`
      : ''
  }
    FROM events e
    WHERE e.state IN ${FIREABLE} AND e.pull = 0 AND e.due_at <= @untilMs
      AND (e.due_at, e.tenant_id, e.id) > (@afterDueAt, @afterTenantId, @afterId)${
        shards
          ? `
      AND e.shard IN (SELECT value FROM json_each(@shards))`
          : ''
      }
      AND (e.grp IS NULL OR ${IS_GROUP_HEAD})
    ORDER BY e.due_at, e.tenant_id, e.id LIMIT @limit`;
  if (!skip) return page;
  return `WITH page AS MATERIALIZED (${page})
    SELECT g.* FROM page g
    WHERE NOT g.skipped
       OR (g.due_at, g.tenant_id, g.id) = (SELECT l.due_at, l.tenant_id, l.id FROM page l ORDER BY l.due_at DESC, l.tenant_id DESC, l.id DESC LIMIT 1)
    ORDER BY g.due_at, g.tenant_id, g.id`;
}

/**
 * 1 when destination `name` of `tenant` is a pull destination, else 0 (an inline URL, a name
 * NULL, or no such destination): one primary-key probe of destinations.
 */
export const IS_PULL_DESTINATION = (tenant: string, name: string) => `coalesce((SELECT 1 FROM destinations d
      WHERE d.tenant_id = ${tenant} AND d.name = ${name} AND json_extract(d.config, '$.kind') = 'pull'), 0)`;

/**
 * One page of a pull claim (see SQL.pullClaimPage): a bounded walk of `index` in due order (a
 * co-routine), each entry's row read and filtered as it comes, until @max rows passed: the outer
 * ORDER BY is the walk's own (no sort), so a page of @max claimable rows reads @max rows, not
 * @examine.
 */
const PULL_CLAIM_PAGE = (index: string, typeTerm: string) => `SELECT ${EVENT_COLUMNS}
    FROM (SELECT seq AS w_seq, due_at AS w_due, id AS w_id FROM events INDEXED BY ${index}
        WHERE tenant_id = @tenantId AND queue = @queue ${typeTerm} AND state IN ${FIREABLE} AND due_at <= @now
        ORDER BY due_at, id LIMIT @examine) w
      CROSS JOIN events e ON e.seq = w.w_seq
    WHERE e.pull = 1 AND (e.grp IS NULL OR ${IS_GROUP_HEAD})
    ORDER BY w.w_due, w.w_id LIMIT @max`;

/** The queue of the events of the named destination @destination (core/queue.ts: `name:<destination>`). */
const DESTINATION_QUEUE = `'name:' || @destination`;

/** Per eventList key: the index a page walks (forced: the planner has no statistics to go by) and its range. */
const LIST_WALKS: Record<ListKey, { index: string; range: string }> = {
  tenant: { index: 'events_tenant_seq', range: 'tenant_id = @tenantId' },
  state: { index: 'events_tenant_state_seq', range: 'tenant_id = @tenantId AND state = @state' },
  destination: { index: 'events_tenant_queue_seq', range: `tenant_id = @tenantId AND queue = ${DESTINATION_QUEUE}` },
  group: { index: 'events_tenant_grp_seq', range: 'tenant_id = @tenantId AND grp = @group' },
  type: { index: 'events_tenant_type_seq', range: 'tenant_id = @tenantId AND type = @type' },
};

/** The walk of one eventList page: the seqs of the first @examine entries of the key's index below @beforeSeq. */
function listWalk(key: ListKey): string {
  const w = LIST_WALKS[key];
  return `SELECT seq FROM events INDEXED BY ${w.index} WHERE ${w.range} AND seq < @beforeSeq ORDER BY seq DESC LIMIT @examine`;
}

function listSql(key: ListKey): string {
  return `SELECT ${EVENT_COLUMNS} FROM events
    WHERE seq IN (${listWalk(key)})
      AND (@state IS NULL OR state = @state)
      AND (@destination IS NULL OR queue = ${DESTINATION_QUEUE})
      AND (@group IS NULL OR grp = @group)
      AND (@type IS NULL OR type = @type)
      AND (@fromMs IS NULL OR fire_at >= @fromMs)
      AND (@toMs IS NULL OR fire_at < @toMs)
    ORDER BY seq DESC LIMIT @limit`;
}

function listWalkSql(key: ListKey): string {
  return `SELECT count(*) AS examined, min(seq) AS last_seq FROM (${listWalk(key)})`;
}

/**
 * An event's `created` transition (seq 1: at its created_at, to scheduled), read from its row and
 * not stored: an insert writes no transition row, a write of a random key into the largest table
 * (measured: about 1 µs of the store thread per inserted event, and a tenth of its WAL bytes).
 */
const CREATED_TRANSITION = `SELECT tenant_id, id, 1, created_at, 'created', NULL, 'scheduled', 0, NULL, NULL, NULL, NULL, NULL
    FROM events WHERE tenant_id = @tenantId AND id = @eventId AND @afterSeq < 1`;

/**
 * The insert of `rows` events in one statement (`rows` VALUES tuples of 18 bind values each, in
 * the order of event-writes.ts pushInsertBinds); a row whose (tenant, id) is stored already is
 * skipped. One statement per chunk of events instead of one per event: measured here, 10.7-11.1
 * against 11.8-12.3 µs of store CPU per inserted event (batches of 1,000, every index), the
 * per-call and per-statement overhead of the driver (better-sqlite3 then) and the VDBE paid once
 * per chunk.
 *
 * It answers nothing: the rows are inserted in VALUES order with consecutive seqs (the table's
 * AUTOINCREMENT rowid, under the write lock), so when every row went in, the caller derives each
 * seq from `lastInsertRowid`, and only a chunk that skipped a row reads its rows back (insertRows).
 * `RETURNING seq, id` cost 0.9-1.1 µs per event, and reading the pull flag from destinations in
 * each row (a subquery parsing the destination's JSON) 0.6-0.8 µs, of 6.5 µs for the statement
 * (.scratch measurement, 192,000 events, three alternating runs); the flag is now looked up once
 * per destination per call and bound.
 */
export function eventInsertSql(rows: number): string {
  const tuple = `(?, ?, ?, 'scheduled', 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)`;
  return `INSERT INTO events (tenant_id, id, shard, state, version, fire_at, due_at, destination,
      payload, headers, grp, retry, expire_at, tags, attempts, request_hash, created_at, updated_at, queue, type, pull)
    VALUES ${Array(rows).fill(tuple).join(',\n      ')}
    ON CONFLICT (tenant_id, id) DO NOTHING`;
}

/**
 * Rows per insert statement, largest first: each chunk of an insert goes in the largest that fits
 * what is left (the last ones one by one). Each statement's binds, per row, in the order of
 * event-writes.ts pushInsertBinds: tenantId, id, shard, fireAt, dueAt, destination json, payload,
 * headers json, group, retry json, expireAt, tags json, requestHash, now, now, queue, type, pull.
 */
export const EVENT_INSERT_CHUNKS = [64, 16, 4, 1] as const;

export const SQL = {
  // () → nothing. Creates the migration ledger.
  migrationsTableCreate: `CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`,
  // () → { version }[]: the applied migrations.
  migrationsApplied: `SELECT version FROM schema_migrations ORDER BY version`,
  // (@version, @name, @appliedAt) → nothing.
  migrationRecord: `INSERT INTO schema_migrations (version, name, applied_at) VALUES (@version, @name, @appliedAt)`,

  // () → { ok: 1 }.
  ping: `SELECT 1 AS ok`,

  // (@id, @name, @settings json, @createdAt, @signingSecrets json) → nothing; throws on a duplicate id.
  tenantInsert: `INSERT INTO tenants (id, name, settings, created_at, signing_secrets)
    VALUES (@id, @name, @settings, @createdAt, @signingSecrets)`,
  // (@id) → TenantRow | undefined.
  tenantGet: `SELECT id, name, settings, created_at FROM tenants WHERE id = @id`,
  // () → TenantRow[] by creation.
  tenantList: `SELECT id, name, settings, created_at FROM tenants ORDER BY created_at, id`,
  // (@id, @settings json) → TenantRow as stored | undefined when there is no such tenant.
  tenantUpdate: `UPDATE tenants SET settings = @settings WHERE id = @id RETURNING id, name, settings, created_at`,
  // (@id) → { signing_secrets } | undefined when there is no such tenant.
  tenantSecretsGet: `SELECT signing_secrets FROM tenants WHERE id = @id`,
  // (@id, @expected json, @secrets json) → changes 1 when the stored secrets equalled @expected (as
  // minified JSON) and are now @secrets, else 0.
  tenantSecretsSwap: `UPDATE tenants SET signing_secrets = @secrets WHERE id = @id AND json(signing_secrets) = json(@expected)`,

  // (@id, @tenantId, @hash, @prefix, @createdAt, @revokedAt) → nothing.
  apiKeyInsert: `INSERT INTO api_keys (id, tenant_id, hash, prefix, created_at, revoked_at)
    VALUES (@id, @tenantId, @hash, @prefix, @createdAt, @revokedAt)`,
  // (@hash) → ApiKeyRow | undefined (revoked keys included; the caller checks revoked_at).
  apiKeyByHash: `SELECT id, tenant_id, hash, prefix, created_at, revoked_at FROM api_keys WHERE hash = @hash`,
  // (@tenantId) → ApiKeyRow[] by creation.
  apiKeyList: `SELECT id, tenant_id, hash, prefix, created_at, revoked_at FROM api_keys
    WHERE tenant_id = @tenantId ORDER BY created_at, id`,
  // (@tenantId, @id, @now, @at) → changes 1 when a key live at @now was revoked (at @at, or at its
  // earlier revocation time if it had one), else 0.
  apiKeyRevoke: `UPDATE api_keys SET revoked_at = min(coalesce(revoked_at, @at), @at)
    WHERE tenant_id = @tenantId AND id = @id AND (revoked_at IS NULL OR revoked_at > @now)`,

  // (@tenantId, @name) → DestinationRow | undefined.
  destinationGet: `SELECT tenant_id, name, config, secrets, created_at, updated_at FROM destinations
    WHERE tenant_id = @tenantId AND name = @name`,
  // (@tenantId) → DestinationRow[] by name.
  destinationList: `SELECT tenant_id, name, config, secrets, created_at, updated_at FROM destinations
    WHERE tenant_id = @tenantId ORDER BY name`,
  // (@tenantId, @name, @config json, @secrets json, @createdAt, @updatedAt) → DestinationRow as stored
  // (a replace keeps the original created_at).
  destinationUpsert: `INSERT INTO destinations (tenant_id, name, config, secrets, created_at, updated_at)
    VALUES (@tenantId, @name, @config, @secrets, @createdAt, @updatedAt)
    ON CONFLICT (tenant_id, name) DO UPDATE SET
      config = excluded.config, secrets = excluded.secrets, updated_at = excluded.updated_at
    RETURNING tenant_id, name, config, secrets, created_at, updated_at`,
  // (@tenantId, @name) → changes 1 when deleted.
  destinationDelete: `DELETE FROM destinations WHERE tenant_id = @tenantId AND name = @name`,

  // (tenantId, name) → { pull: 1 } when that registered destination is of kind pull, else { pull: 0 }.
  // What an insert binds as the event's `pull` (once per destination per insert call).
  destinationIsPull: `SELECT ${IS_PULL_DESTINATION('?', '?')} AS pull`,
  // () → { seq }: the largest seq stored (0 when empty): the rowid b-tree's last entry.
  eventSeqMax: `SELECT coalesce(max(seq), 0) AS seq FROM events`,
  // (tenantId, id) → EventRow | undefined.
  eventGet: `SELECT ${EVENT_COLUMNS} FROM events WHERE tenant_id = ? AND id = ?`,
  // (tenantId, id, version) → EventTuple (raw: an array in EVENT_COLUMNS order) of the event as it
  // is before the claim, when it may be claimed now: fireable, at that version, and (if grouped)
  // its group's head; otherwise no row. The claim's UPDATE then goes by seq without RETURNING:
  // measured 3.3 µs (raw read) + 2.5 µs (update by seq) per row against 1.4 µs (check) + 10.4 µs
  // (UPDATE ... RETURNING every column, as objects).
  eventClaimCheck: `SELECT ${EVENT_COLUMNS} FROM events e
    WHERE e.tenant_id = ? AND e.id = ? AND e.version = ? AND e.state IN ${FIREABLE} AND e.pull = 0
      AND (e.grp IS NULL OR ${IS_GROUP_HEAD})`,
  // (tenantId, id, version, owner) → as eventClaimCheck, and only when the event's shard is
  // assigned to `owner` in the shard map (fenceByShardOwner).
  eventClaimCheckFenced: `SELECT ${EVENT_COLUMNS} FROM events e
    WHERE e.tenant_id = ? AND e.id = ? AND e.version = ? AND e.state IN ${FIREABLE} AND e.pull = 0
      AND (e.grp IS NULL OR ${IS_GROUP_HEAD})
      AND EXISTS (SELECT 1 FROM shard_assignments s WHERE s.shard = e.shard AND s.node_id = ?)`,
  // (owner, leaseUntil, now, seq, version) → run(): changes 1 when claimed. Runs right after
  // eventClaimCheck found the row claimable, in the same transaction.
  eventClaim: `UPDATE events SET state = ${SQL_STATE.executing}, version = version + 1, attempts = attempts + 1,
      lease_owner = ?, lease_until = ?, updated_at = ?
    WHERE seq = ? AND version = ? AND state IN ${FIREABLE}`,
  // (tenantId, id, version, owner) → [seq, attempts] (raw) when the event is executing at that
  // version under that owner, else no row.
  eventRecordCheck: `SELECT seq, attempts FROM events
    WHERE tenant_id = ? AND id = ? AND version = ? AND state = ${SQL_STATE.executing} AND lease_owner = ?`,
  // (toState, retryAt|null, status, error, now, seq, version) → run(): changes 1 when recorded. Runs
  // right after eventRecordCheck, in the same transaction (check + update by seq: 3.6 µs per row,
  // against 4.8 µs for one UPDATE ... RETURNING).
  eventRecordAttempt: `UPDATE events SET state = ?, due_at = coalesce(?, due_at), last_status = ?,
      last_error = ?, updated_at = ?, version = version + 1, lease_owner = NULL, lease_until = NULL
    WHERE seq = ? AND version = ? AND state = ${SQL_STATE.executing}`,

  // (@untilMs, @afterDueAt, @afterTenantId, @afterId, @limit) → DueRefRow[] in (due_at, tenant_id, id)
  // order: fireable, due by untilMs, after the cursor, group heads only; all shards.
  eventListDueAll: dueList(false, false),
  // As eventListDueAll, plus (@shards: JSON array of shard numbers) → only those shards.
  eventListDueShards: dueList(true, false),
  // As eventListDueAll and eventListDueShards, plus (@skip: JSON array of [tenantId, queue, dueAt,
  // id]): rows of those queues from (dueAt, id) on are left out but the last row examined
  // (EventListDueParams.skip); see dueList.
  eventListDueAllSkip: dueList(false, true),
  eventListDueShardsSkip: dueList(true, true),
  // (@tenantId, @queue, @untilMs, @fromDueAt, @fromId, @shards: JSON array or NULL for all, @limit)
  //  → DueRefRow[]: one queue's fireable rows (group heads only) with (due_at, id) ≥ the start, in
  //  that order. A range scan of events_queue_due: never another queue's rows.
  eventListDueQueue: `SELECT e.tenant_id, e.id, e.version, e.due_at, e.shard, e.grp, e.queue
    FROM events e INDEXED BY events_queue_due
    WHERE e.tenant_id = @tenantId AND e.queue = @queue AND e.state IN ${FIREABLE} AND e.pull = 0
      AND e.due_at <= @untilMs AND (e.due_at, e.id) >= (@fromDueAt, @fromId)
      AND (@shards IS NULL OR e.shard IN (SELECT value FROM json_each(@shards)))
      AND (e.grp IS NULL OR ${IS_GROUP_HEAD})
    ORDER BY e.due_at, e.id LIMIT @limit`,
  // (@tenantId, @group) → { tenant_id, id, version, due_at, shard, grp, queue, state, pull } of the
  // group's head (see IS_GROUP_HEAD): its executing member, else its first started member, else its
  // first live member by (fire_at, seq); or no row.
  eventGroupFirst: `SELECT tenant_id, id, version, due_at, shard, grp, queue, state, pull FROM (
      SELECT * FROM (SELECT tenant_id, id, version, due_at, shard, grp, queue, state, pull, 0 AS rank FROM events
        WHERE tenant_id = @tenantId AND grp = @group AND state IN ${STARTED}
        ORDER BY state = ${SQL_STATE.executing} DESC, fire_at, seq LIMIT 1)
      UNION ALL
      SELECT * FROM (SELECT tenant_id, id, version, due_at, shard, grp, queue, state, pull, 1 AS rank FROM events
        WHERE tenant_id = @tenantId AND grp = @group AND state IN ${LIVE}
        ORDER BY fire_at, seq LIMIT 1))
    ORDER BY rank LIMIT 1`,

  // (@owner, @leaseUntil) → nothing: @owner's claim lease ends at @leaseUntil or later (never earlier).
  claimLeaseRenew: `INSERT INTO claim_leases (owner, lease_until) VALUES (@owner, @leaseUntil)
    ON CONFLICT (owner) DO UPDATE SET lease_until = max(lease_until, excluded.lease_until)`,
  // (@owner, @leaseUntil) → nothing: drops other owners' leases that ended a day before
  // @leaseUntil (their events are past rescue).
  claimLeasePrune: `DELETE FROM claim_leases WHERE lease_until < @leaseUntil - 86400000 AND owner <> @owner`,
  // (@now, @limit) → { shard, due_events, oldest_due_at }[]: fireable rows due by @now, per shard.
  shardLag: `SELECT shard, count(*) AS due_events, min(due_at) AS oldest_due_at FROM events
    WHERE state IN ${FIREABLE} AND pull = 0 AND due_at <= @now
    GROUP BY shard ORDER BY oldest_due_at LIMIT @limit`,
  // (@leaseExpiredBefore, @notOwnedBy|null, @heldBy|null, @limit) →
  // { tenant_id, id, version, lease_owner, expired }[]: executing events whose lease ended (their
  // own and their owner's claim lease), or, when given, held by another owner than @notOwnedBy,
  // or by @heldBy.
  eventRescueCandidates: `SELECT tenant_id, id, version, lease_owner, (lease_until < @leaseExpiredBefore) AS expired
    FROM events e
    WHERE state = ${SQL_STATE.executing} AND pull = 0
      AND ((lease_until < @leaseExpiredBefore AND NOT EXISTS (
             SELECT 1 FROM claim_leases c WHERE c.owner = e.lease_owner AND c.lease_until >= @leaseExpiredBefore))
           OR (@notOwnedBy IS NOT NULL AND lease_owner IS NOT @notOwnedBy)
           OR (@heldBy IS NOT NULL AND lease_owner = @heldBy))
    ORDER BY lease_until LIMIT @limit`,
  // (@owners json array, @heartbeatBefore, @limit) → { tenant_id, id, version, lease_owner, expired: 0 }[]:
  // executing events held by one of @owners whose node row's heartbeat is at or before
  // @heartbeatBefore (an owner without a row is left alone), oldest lease first.
  eventRescueDeadCandidates: `SELECT tenant_id, id, version, lease_owner, 0 AS expired FROM events INDEXED BY events_executing
    WHERE state = ${SQL_STATE.executing} AND pull = 0 AND lease_owner IN (
      SELECT n.id FROM nodes n WHERE n.id IN (SELECT value FROM json_each(@owners)) AND n.heartbeat_at <= @heartbeatBefore)
    ORDER BY lease_until LIMIT @limit`,
  // (now, now, tenantId, id, version) → { tenant_id, id, version, due_at, shard, grp, attempts } after
  // the change, or no row when it changed meanwhile.
  eventRescue: `UPDATE events SET state = ${SQL_STATE.awaiting_retry}, due_at = ?, updated_at = ?, version = version + 1,
      lease_owner = NULL, lease_until = NULL
    WHERE tenant_id = ? AND id = ? AND version = ? AND state = ${SQL_STATE.executing}
    RETURNING tenant_id, id, version, due_at, shard, grp, queue, attempts`,

  // (@now, @tenantId, @id, @version, @reason|null) → EventRow after cancel (last_error = @reason when
  // given), or no row when not cancelable at that version.
  eventCancel: `UPDATE events SET state = ${SQL_STATE.canceled}, version = version + 1, updated_at = @now,
      lease_owner = NULL, lease_until = NULL, last_error = coalesce(@reason, last_error)
    WHERE tenant_id = @tenantId AND id = @id AND version = @version AND state IN ${CANCELABLE}
    RETURNING ${EVENT_COLUMNS}`,
  // (@now, @tenantId, @id, @version) → EventRow after replay (scheduled, due now, attempts 0, last
  // status and error cleared), or no row when not replayable at that version.
  eventReplay: `UPDATE events SET state = ${SQL_STATE.scheduled}, due_at = @now, attempts = 0, last_status = NULL,
      last_error = NULL, version = version + 1, updated_at = @now, lease_owner = NULL, lease_until = NULL,
      pull = ${IS_PULL_DESTINATION('events.tenant_id', `json_extract(events.destination, '$.name')`)}
    WHERE tenant_id = @tenantId AND id = @id AND version = @version AND state IN ${REPLAYABLE}
    RETURNING ${EVENT_COLUMNS}`,
  // (@fireAt, @dueAt, @payload, @headers json, @destination json, @queue, @expireAt, @type, @requestHash,
  //  @now, @tenantId, @id, @version) → EventRow after the edit, or no row when not scheduled at that version.
  eventEdit: `UPDATE events SET fire_at = @fireAt, due_at = @dueAt, payload = @payload, headers = @headers,
      destination = @destination, queue = @queue, expire_at = @expireAt, type = @type, request_hash = @requestHash,
      version = version + 1, updated_at = @now,
      pull = ${IS_PULL_DESTINATION('@tenantId', `json_extract(@destination, '$.name')`)}
    WHERE tenant_id = @tenantId AND id = @id AND version = @version AND state IN ${EDITABLE}
    RETURNING ${EVENT_COLUMNS}`,

  // Pull delivery (docs/pull.md). pullClaimPage(@tenantId, @queue, @now, @examine, @max) → EventTuple[] (raw):
  // of the first @examine fireable rows of the queue due by @now (events_queue_due, due order),
  // the pull rows that are their group's head, at most @max. pullClaimPageTyped: the same, of one
  // type (@type), from events_pull_type_due.
  pullClaimPage: PULL_CLAIM_PAGE('events_queue_due', ''),
  pullClaimPageTyped: PULL_CLAIM_PAGE('events_pull_type_due', 'AND type = @type AND pull = 1'),
  // (leaseUntil, receipt, now, seq, version) → run(): changes 1 when claimed (after pullClaimPage
  // found it, in the same transaction).
  pullClaim: `UPDATE events SET state = ${SQL_STATE.executing}, version = version + 1, attempts = attempts + 1,
      lease_owner = 'pull', lease_until = ?, receipt = ?, updated_at = ?
    WHERE seq = ? AND version = ? AND state IN ${FIREABLE} AND pull = 1`,
  // (tenantId, id, receipt, attempts) → EventTuple (raw) when the event is a pull event executing
  // under that receipt at that attempt, else no row. The settle's UPDATE then goes by seq without
  // RETURNING, as a push claim's does (eventClaimCheck says why).
  pullHeldCheck: `SELECT ${EVENT_COLUMNS} FROM events
    WHERE tenant_id = ? AND id = ? AND state = ${SQL_STATE.executing} AND pull = 1 AND receipt = ? AND attempts = coalesce(?, attempts)`,
  // (toState, retryAt|null, error|null, now, seq, version) → run(): changes 1 after the ack, nack or expiry.
  pullSettle: `UPDATE events SET state = ?, due_at = coalesce(?, due_at), last_error = ?, updated_at = ?,
      version = version + 1, lease_owner = NULL, lease_until = NULL, receipt = NULL
    WHERE seq = ? AND version = ? AND state = ${SQL_STATE.executing}`,
  // (leaseUntil, now, seq, version) → EventRow after the extend (never shortens the lease).
  pullExtend: `UPDATE events SET lease_until = max(lease_until, ?), updated_at = ?, version = version + 1
    WHERE seq = ? AND version = ? AND state = ${SQL_STATE.executing}
    RETURNING ${EVENT_COLUMNS}`,
  // (@now, @limit) → (EventRow + receipt)[]: claimed pull events whose visibility timeout ended
  // before @now, the oldest first (events_pull_leases).
  pullExpired: `SELECT ${EVENT_COLUMNS}, receipt FROM events INDEXED BY events_pull_leases
    WHERE state = ${SQL_STATE.executing} AND pull = 1 AND lease_until < @now
    ORDER BY lease_until LIMIT @limit`,
  // (@tenantId, @queue) → { due_at } of the queue's first fireable row, or no row (one probe of events_queue_due).
  pullNextDue: `SELECT due_at FROM events INDEXED BY events_queue_due
    WHERE tenant_id = @tenantId AND queue = @queue AND state IN ${FIREABLE}
    ORDER BY due_at LIMIT 1`,

  // (@tenantId, @state, @finishedBefore, @limit) → { id }[] of the events deleted: at most @limit of
  // the tenant's events in terminal @state with updated_at < @finishedBefore, oldest first. A
  // range scan of events_terminal (the `state IN` term is spelled as its predicate so SQLite may
  // use it); state and age are checked again on the rows deleted.
  eventDeleteTerminal: `DELETE FROM events WHERE seq IN (
      SELECT seq FROM events
      WHERE tenant_id = @tenantId AND state = @state AND state IN ${TERMINAL} AND updated_at < @finishedBefore
      ORDER BY updated_at LIMIT @limit)
    AND state = @state AND updated_at < @finishedBefore
    RETURNING id`,

  // eventList, one pair of statements per index a page may walk (see store/event-list-plan.ts):
  // eventListBy<Key>(@tenantId, @beforeSeq, @state|null, @destination|null, @group|null, @type|null,
  //  @fromMs|null, @toMs|null, @examine, @limit) → EventRow[] newest first (seq desc): of the first
  //  @examine entries of the key's index below @beforeSeq, the rows matching every given filter, at
  //  most @limit. eventListWalk<Key>(@tenantId, @beforeSeq, @state|null, @destination|null,
  //  @group|null, @type|null, @examine) → { examined, last_seq }: how many entries that walk covered and the
  //  lowest seq among them (where the next page starts when the walk was cut).
  eventListByTenant: listSql('tenant'),
  eventListByState: listSql('state'),
  eventListByDestination: listSql('destination'),
  eventListByGroup: listSql('group'),
  eventListByType: listSql('type'),
  eventListWalkTenant: listWalkSql('tenant'),
  eventListWalkState: listWalkSql('state'),
  eventListWalkDestination: listWalkSql('destination'),
  eventListWalkGroup: listWalkSql('group'),
  eventListWalkType: listWalkSql('type'),

  // () → LeaderLeaseRow | undefined: the lease as stored, expired or not.
  leaderGet: `SELECT node_id, epoch, expires_at FROM leader_lease WHERE id = 1`,
  // (@nodeId, @now, @expiresAt) → LeaderLeaseRow when @nodeId holds the lease afterwards, else no
  // row. Takes a free or expired lease (epoch + 1; 1 for the first), extends an unexpired one
  // held by @nodeId (same epoch). SET reads the old row, so the CASE sees the old expiry.
  leaderElect: `INSERT INTO leader_lease (id, node_id, epoch, expires_at) VALUES (1, @nodeId, 1, @expiresAt)
    ON CONFLICT (id) DO UPDATE SET
      epoch = CASE WHEN leader_lease.expires_at > @now THEN leader_lease.epoch ELSE leader_lease.epoch + 1 END,
      node_id = excluded.node_id, expires_at = excluded.expires_at
    WHERE leader_lease.expires_at <= @now OR leader_lease.node_id = @nodeId
    RETURNING node_id, epoch, expires_at`,
  // (@nodeId, @epoch, @now) → changes 1 when @nodeId held the lease at @epoch; it is expired from @now.
  leaderResign: `UPDATE leader_lease SET expires_at = min(expires_at, @now)
    WHERE id = 1 AND node_id = @nodeId AND epoch = @epoch`,
  // (@leaderId, @epoch, @now) → { ok: 1 } when (@leaderId, @epoch) is the unexpired lease, else no row.
  leaderCheck: `SELECT 1 AS ok FROM leader_lease
    WHERE id = 1 AND node_id = @leaderId AND epoch = @epoch AND expires_at > @now`,

  // (@id, @now, @meta json) → nothing. Registers a node (started_at = heartbeat_at = @now) or
  // refreshes its heartbeat and meta (started_at kept).
  nodeUpsert: `INSERT INTO nodes (id, started_at, heartbeat_at, meta) VALUES (@id, @now, @now, @meta)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, meta = excluded.meta`,
  // () → NodeRow[] by id.
  nodeList: `SELECT id, started_at, heartbeat_at, meta FROM nodes ORDER BY id`,
  // (@id) → nothing.
  nodeDelete: `DELETE FROM nodes WHERE id = @id`,

  // () → nothing. Empties the shard map (shardAssign writes the whole map again after it).
  shardClear: `DELETE FROM shard_assignments`,
  // (shard, nodeId, epoch) → nothing.
  shardInsert: `INSERT INTO shard_assignments (shard, node_id, epoch) VALUES (?, ?, ?)`,
  // () → ShardAssignmentRow[] by shard.
  shardList: `SELECT shard, node_id, epoch FROM shard_assignments ORDER BY shard`,
  // (shardCount as text) → nothing: stores the shard count unless one is stored.
  shardCountInsert: `INSERT INTO store_settings (name, value) VALUES ('shard_count', ?) ON CONFLICT (name) DO NOTHING`,
  // () → { value } | none: the stored shard count.
  shardCountGet: `SELECT value FROM store_settings WHERE name = 'shard_count'`,

  // (tenantId, eventId, seq, at, kind, fromState, toState, attempt, status, error, durationMs,
  //  latenessMs, detail json) → nothing.
  transitionInsert: `INSERT INTO transitions (tenant_id, event_id, seq, at, kind, from_state, to_state,
      attempt, status, error, duration_ms, lateness_ms, detail)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  // (tenantId, eventId) → run(): changes = the transitions deleted (the whole trace of the event).
  transitionDeleteEvent: `DELETE FROM transitions WHERE tenant_id = ? AND event_id = ?`,
  // (@tenantId, @eventId, @afterSeq, @limit) → TransitionRow[] in trace order. The stored
  // transitions, and the `created` one (seq 1) read from the event row (CREATED_TRANSITION).
  transitionList: `SELECT tenant_id, event_id, seq, at, kind, from_state, to_state, attempt, status, error,
      duration_ms, lateness_ms, detail FROM transitions
    WHERE tenant_id = @tenantId AND event_id = @eventId AND seq > @afterSeq
    UNION ALL
    ${CREATED_TRANSITION}
    ORDER BY seq LIMIT @limit`,
} as const;

/**
 * The statements of the reader thread (reader-thread.ts): reads that take time in proportion to
 * the table, run on a connection and a thread of their own. Each is a covering scan of
 * events_tenant_state_seq (no temporary b-tree: the grouping follows the index).
 */
export const READER_SQL = {
  // () → { tenant_id, state, n }[]: every (tenant, state) that has events.
  eventCountByTenantState: `SELECT tenant_id, state, count(*) AS n FROM events INDEXED BY events_tenant_state_seq
    GROUP BY tenant_id, state`,
  // (@tenantId, @fromMs, @toMs, @bucketMs, @by) → { bucket, key, n }[]: the tenant's scheduled
  // events with @fromMs ≤ due_at < @toMs per bucket ((due_at - @fromMs) / @bucketMs, in integers:
  // JavaScript numbers bind as REAL) and, by
  // @by, per queue or tenant. One covering range scan of events_forecast.
  eventForecastTenant: `SELECT (due_at - CAST(@fromMs AS INTEGER)) / CAST(@bucketMs AS INTEGER) AS bucket,
      CASE @by WHEN 'destination' THEN queue WHEN 'tenant' THEN tenant_id END AS key, count(*) AS n
    FROM events INDEXED BY events_forecast
    WHERE tenant_id = @tenantId AND state = ${SQL_STATE.scheduled} AND due_at >= @fromMs AND due_at < @toMs
    GROUP BY bucket, key`,
  // (@fromMs, @toMs, @bucketMs, @by) → as eventForecastTenant over every tenant: one range scan of
  // events_forecast per tenant (the tenants table drives the loop).
  eventForecastAll: `SELECT (e.due_at - CAST(@fromMs AS INTEGER)) / CAST(@bucketMs AS INTEGER) AS bucket,
      CASE @by WHEN 'destination' THEN e.queue WHEN 'tenant' THEN e.tenant_id END AS key, count(*) AS n
    FROM tenants t CROSS JOIN events e INDEXED BY events_forecast
    WHERE e.tenant_id = t.id AND e.state = ${SQL_STATE.scheduled} AND e.due_at >= @fromMs AND e.due_at < @toMs
    GROUP BY bucket, key`,
  // (@tenantId) → { n }: the tenant's unfinished events, from three ranges of the state index.
  eventCountPending: `SELECT count(*) AS n FROM events INDEXED BY events_tenant_state_seq
    WHERE tenant_id = @tenantId AND state IN ${LIVE}`,
} as const;

/** Prepares every statement once (the schema must exist); the result is the backend's only handle on SQL. */
export function prepareQueries(db: Connection) {
  const p = <Row = unknown>(sql: string) => db.prepare<Row>(sql);
  /** Rows as arrays in column order: no object (and no property per column) per row. */
  const raw = <Tuple extends unknown[]>(sql: string) => db.prepareArrays<Tuple>(sql);
  return {
    ping: p<{ ok: number }>(SQL.ping),
    tenantInsert: p(SQL.tenantInsert),
    tenantGet: p<TenantRow>(SQL.tenantGet),
    tenantList: p<TenantRow>(SQL.tenantList),
    tenantUpdate: p<TenantRow>(SQL.tenantUpdate),
    tenantSecretsGet: p<{ signing_secrets: string }>(SQL.tenantSecretsGet),
    tenantSecretsSwap: p(SQL.tenantSecretsSwap),
    apiKeyInsert: p(SQL.apiKeyInsert),
    apiKeyByHash: p<ApiKeyRow>(SQL.apiKeyByHash),
    apiKeyList: p<ApiKeyRow>(SQL.apiKeyList),
    apiKeyRevoke: p(SQL.apiKeyRevoke),
    destinationGet: p<DestinationRow>(SQL.destinationGet),
    destinationList: p<DestinationRow>(SQL.destinationList),
    destinationUpsert: p<DestinationRow>(SQL.destinationUpsert),
    destinationDelete: p(SQL.destinationDelete),
    eventInsertChunk: new Map(EVENT_INSERT_CHUNKS.map((k) => [k, p(eventInsertSql(k))] as const)),
    destinationIsPull: p<{ pull: number }>(SQL.destinationIsPull),
    eventSeqMax: p<{ seq: number }>(SQL.eventSeqMax),
    eventGet: p<EventRow>(SQL.eventGet),
    eventClaimCheck: raw<EventTuple>(SQL.eventClaimCheck),
    eventClaimCheckFenced: raw<EventTuple>(SQL.eventClaimCheckFenced),
    eventClaim: p(SQL.eventClaim),
    eventRecordCheck: raw<[seq: number, attempts: number]>(SQL.eventRecordCheck),
    eventRecordAttempt: p(SQL.eventRecordAttempt),
    eventListDueAll: p<DueRefRow>(SQL.eventListDueAll),
    eventListDueShards: p<DueRefRow>(SQL.eventListDueShards),
    eventListDueAllSkip: p<DueRefRow>(SQL.eventListDueAllSkip),
    eventListDueShardsSkip: p<DueRefRow>(SQL.eventListDueShardsSkip),
    eventListDueQueue: p<DueRefRow>(SQL.eventListDueQueue),
    // Prepared once: writeRelaxed runs these twice per claim or outcome batch.
    synchronousNormal: p(`PRAGMA synchronous = NORMAL`),
    synchronousFull: p(`PRAGMA synchronous = FULL`),
    // The writer's auto-checkpoint, kept only as a bound (checkpointer.ts runs them off the writer).
    walAutocheckpoint: p(`PRAGMA wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`),
    eventGroupFirst: p<DueRefRow & { state: string; pull: number }>(SQL.eventGroupFirst),
    pullClaimPage: raw<EventTuple>(SQL.pullClaimPage),
    pullClaimPageTyped: raw<EventTuple>(SQL.pullClaimPageTyped),
    pullClaim: p(SQL.pullClaim),
    pullHeldCheck: raw<EventTuple>(SQL.pullHeldCheck),
    pullSettle: p(SQL.pullSettle),
    pullExtend: p<EventRow>(SQL.pullExtend),
    pullExpired: p<EventRow & { receipt: string }>(SQL.pullExpired),
    pullNextDue: p<{ due_at: number }>(SQL.pullNextDue),
    claimLeaseRenew: p(SQL.claimLeaseRenew),
    claimLeasePrune: p(SQL.claimLeasePrune),
    shardLag: p<{ shard: number; due_events: number; oldest_due_at: number }>(SQL.shardLag),
    eventRescueCandidates: p<RescueCandidateRow>(SQL.eventRescueCandidates),
    eventRescue: p<DueRefRow & { attempts: number }>(SQL.eventRescue),
    eventRescueDeadCandidates: p<RescueCandidateRow>(SQL.eventRescueDeadCandidates),
    eventCancel: p<EventRow>(SQL.eventCancel),
    eventReplay: p<EventRow>(SQL.eventReplay),
    eventEdit: p<EventRow>(SQL.eventEdit),
    eventDeleteTerminal: p<{ id: string }>(SQL.eventDeleteTerminal),
    eventListBy: {
      tenant: p<EventRow>(SQL.eventListByTenant),
      state: p<EventRow>(SQL.eventListByState),
      destination: p<EventRow>(SQL.eventListByDestination),
      group: p<EventRow>(SQL.eventListByGroup),
      type: p<EventRow>(SQL.eventListByType),
    } satisfies Record<ListKey, unknown>,
    eventListWalk: {
      tenant: p<ListWalkRow>(SQL.eventListWalkTenant),
      state: p<ListWalkRow>(SQL.eventListWalkState),
      destination: p<ListWalkRow>(SQL.eventListWalkDestination),
      group: p<ListWalkRow>(SQL.eventListWalkGroup),
      type: p<ListWalkRow>(SQL.eventListWalkType),
    } satisfies Record<ListKey, unknown>,
    leaderGet: p<LeaderLeaseRow>(SQL.leaderGet),
    leaderElect: p<LeaderLeaseRow>(SQL.leaderElect),
    leaderResign: p(SQL.leaderResign),
    leaderCheck: p<{ ok: number }>(SQL.leaderCheck),
    nodeUpsert: p(SQL.nodeUpsert),
    nodeList: p<NodeRow>(SQL.nodeList),
    nodeDelete: p(SQL.nodeDelete),
    shardClear: p(SQL.shardClear),
    shardInsert: p(SQL.shardInsert),
    shardList: p<ShardAssignmentRow>(SQL.shardList),
    shardCountInsert: p(SQL.shardCountInsert),
    shardCountGet: p<{ value: string }>(SQL.shardCountGet),
    transitionInsert: p(SQL.transitionInsert),
    transitionList: p<TransitionRow>(SQL.transitionList),
    transitionDeleteEvent: p(SQL.transitionDeleteEvent),
  };
}

export type Queries = ReturnType<typeof prepareQueries>;
