/**
 * The PostgreSQL store distributed on Citus (citus/distribute.ts), on a real cluster of a
 * coordinator and two workers started for this file (test/support/citus.ts): the Store
 * conformance suite, every store in a fresh schema distributed at its creation, and what only
 * the distributed layout has. Skipped, with the reason, where Citus is not installed; never in CI
 * (BELFRY_REQUIRE_CITUS=1).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { citusSkip, startCitus } from '../../../test/support/citus.ts';
import {
  insertAll,
  mustClaim,
  mustRecord,
  newEvent,
  newTenant,
  outcome,
  pullClaimParams,
  pullDestination,
  SEC,
  T0,
} from '../conformance/fixtures.ts';
import { runStoreConformance } from '../conformance/store-conformance.ts';
import { shardOf } from '../../core/shard.ts';
import { CITUS_DISTRIBUTED_TABLES, CITUS_REFERENCE_TABLES } from './citus/distribute.ts';
import { CITUS_SQL, type CitusQueryName } from './citus/queries.ts';
import { CITUS_OCCURRENCE_REVIVE } from './schedule-store.ts';
import { openPostgresStore, type PostgresStore } from './postgres-store.ts';

const skip = citusSkip();
const url = skip ? '' : await startCitus();
const admin = skip ? null : new pg.Pool({ connectionString: url, max: 2 });
admin?.on('error', () => {});
after(async () => {
  await admin?.end();
});

function freshSchema(): string {
  return `belfry_citus_${randomBytes(6).toString('hex')}`;
}

async function openFresh(schema: string) {
  return openPostgresStore({ url, schema, poolSize: 4, citus: true });
}

/** `fn` on a store in a fresh schema distributed on Citus; the store closed and the schema dropped afterwards. */
async function withFresh(fn: (store: PostgresStore, schema: string) => Promise<void>): Promise<void> {
  const schema = freshSchema();
  const store = await openFresh(schema);
  try {
    await fn(store, schema);
  } finally {
    await store.close();
    await admin!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  }
}

if (skip) {
  describe('Store conformance: postgres on Citus', () => {
    it('needs Citus', (t) => {
      t.skip(skip);
    });
  });
} else {
  runStoreConformance('postgres on Citus', async () => {
    const schema = freshSchema();
    const store = await openFresh(schema);
    return {
      store,
      cleanup: async () => {
        await store.close();
        await admin!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      },
      reopen: () => openFresh(schema),
    };
  });

  describe('PostgresStore on Citus', () => {
    it('distributes events, transitions and the locator by shard, co-located, and copies the rest to every worker', () =>
      withFresh(async (store, schema) => {
        const tables = await admin!.query<{ name: string; type: string; column: string; colocation: number }>(
          `SELECT c.relname AS name, t.citus_table_type AS type, t.distribution_column AS column, t.colocation_id AS colocation
             FROM citus_tables t JOIN pg_class c ON c.oid = t.table_name JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 ORDER BY c.relname`,
          [schema],
        );
        const byName = new Map(tables.rows.map((r) => [r.name, r]));
        assert.deepEqual(
          [...byName.keys()].sort(),
          [...CITUS_DISTRIBUTED_TABLES, ...CITUS_REFERENCE_TABLES].sort(),
          'every table of the schema is a Citus table',
        );
        for (const name of CITUS_DISTRIBUTED_TABLES) {
          assert.equal(byName.get(name)?.type, 'distributed', name);
          assert.equal(byName.get(name)?.column, 'shard', name);
          assert.equal(
            byName.get(name)?.colocation,
            byName.get('events')?.colocation,
            `${name} co-located with events`,
          );
        }
        for (const name of CITUS_REFERENCE_TABLES) assert.equal(byName.get(name)?.type, 'reference', name);
        await store.close();
        // Opening it again changes nothing.
        await (await openFresh(schema)).close();
      }));

    it('claims and records on the worker of the shard; a shard moved meanwhile goes through the coordinator, then to its new worker', () =>
      withFresh(async (store, schema) => {
        const workers = store.citusWorkers!;
        const tenantId = await newTenant(store);
        const [a, b] = await insertAll(store, [
          newEvent(tenantId, 'a', { shard: 7 }),
          newEvent(tenantId, 'b', { shard: 7 }),
        ]);
        const running = await mustClaim(store, a, T0 + 10 * SEC);
        assert.deepEqual(workers.counts, { done: 1, away: 0 }, 'the claim ran on the worker');
        // Move the Citus shard holding Belfry shard 7 (and its co-located shards) to the other worker.
        const { rows } = await admin!.query<{
          id: string;
          host: string;
          port: number;
          to_host: string;
          to_port: number;
        }>(
          `SELECT p.shardid::text AS id, p.nodename AS host, p.nodeport AS port, n.nodename AS to_host, n.nodeport AS to_port
             FROM pg_dist_shard_placement p JOIN pg_dist_node n ON n.nodeport <> p.nodeport AND n.groupid <> 0
            WHERE p.shardid = get_shard_id_for_distribution_column('"${schema}".events', 7)`,
        );
        assert.equal(rows.length, 1, 'one other worker to move to');
        const m = rows[0];
        await admin!.query(
          "SELECT citus_move_shard_placement($1::bigint, $2, $3, $4, $5, shard_transfer_mode => 'block_writes')",
          [m.id, m.host, m.port, m.to_host, m.to_port],
        );
        // The node's map still names the old worker: the outcome finds the shard gone, takes the
        // coordinator's route, and applies once.
        const done = await mustRecord(store, outcome(running, 'succeeded', { status: 200 }), T0 + 11 * SEC);
        assert.equal(done.state, 'succeeded');
        assert.deepEqual(workers.counts, { done: 1, away: 1 }, 'the outcome found the shard moved');
        assert.deepEqual(
          (await store.transitionList({ tenantId, eventId: 'a', limit: 10 })).map((t) => t.toState),
          ['scheduled', 'executing', 'succeeded'],
          'each change traced once',
        );
        // The map read again: the next claim runs on the new worker.
        const next = await mustClaim(store, b, T0 + 12 * SEC);
        assert.equal(next.state, 'executing');
        assert.deepEqual(workers.counts, { done: 2, away: 1 }, 'the next claim ran on the new worker');
      }));

    it('reads a queue, claims a batch over many Citus shards and records its outcomes in one call per worker; each event traced once', () =>
      withFresh(async (store, schema) => {
        const workers = store.citusWorkers!;
        const tenantId = await newTenant(store);
        const ids = Array.from({ length: 40 }, (_, i) => `m${i}`);
        const inserted = await insertAll(
          store,
          ids.map((id) => newEvent(tenantId, id, { shard: shardOf(tenantId, id, 256) })),
        );
        const placed = (
          await admin!.query<{ id: string; port: number }>(
            `SELECT p.shardid::text AS id, p.nodeport AS port FROM unnest($1::int[]) s
               JOIN pg_dist_shard_placement p ON p.shardid = get_shard_id_for_distribution_column('"${schema}".events', s)`,
            [inserted.map((e) => e.shard)],
          )
        ).rows;
        const citusShards = new Set(placed.map((r) => r.id));
        const onWorkers = new Set(placed.map((r) => r.port));
        assert.ok(citusShards.size > onWorkers.size, 'the batch spans several Citus shards of a worker');
        // Every statement prepared on every connection, as before a node says it is ready: a
        // statement not prepared yet on its connection runs on its own first.
        await store.warmUp!(256);
        const now = T0 + 10 * SEC;
        // The queue's due rows (a refill) and a due list skipping it, read on the workers.
        let before = workers.counts.done;
        const queued = await store.eventListDue({
          shards: Array.from({ length: 256 }, (_, s) => s),
          after: null,
          untilMs: now,
          limit: 30,
          queue: { tenantId, queue: 'name:orders', from: null },
        });
        assert.equal(queued.length, 30);
        assert.equal(workers.counts.done - before, onWorkers.size, 'a queue read: one call per worker');
        before = workers.counts.done;
        const skipped = await store.eventListDue({
          shards: Array.from({ length: 256 }, (_, s) => s),
          after: null,
          untilMs: now,
          limit: 100,
          skip: [{ tenantId, queue: 'name:orders', from: { dueAt: Number.MIN_SAFE_INTEGER, id: '' } }],
        });
        assert.ok(skipped.length <= 1, 'the skipped queue left out (but for the bound row)');
        assert.ok(workers.counts.done - before >= citusShards.size, 'a due list with skip: on the workers');
        before = workers.counts.done;
        const claimed = await store.eventClaim({
          refs: inserted.map((e) => ({ tenantId, id: e.id, version: e.version, group: null, shard: e.shard })),
          now,
          owner: 'node-a',
          leaseUntil: now + 30 * SEC,
        });
        assert.deepEqual(
          claimed.map((e) => [e.id, e.state]),
          ids.map((id) => [id, 'executing']),
          'every event claimed, in the order asked',
        );
        assert.equal(workers.counts.done - before, onWorkers.size, 'one call per worker');
        before = workers.counts.done;
        const applied = await store.eventRecordAttempts({
          outcomes: claimed.map((e) => outcome(e, 'succeeded', { status: 200, shard: e.shard })),
          now: now + SEC,
        });
        assert.deepEqual(
          applied,
          ids.map(() => true),
        );
        assert.equal(workers.counts.done - before, onWorkers.size, 'one call per worker');
        for (const id of ids.slice(0, 5))
          assert.deepEqual(
            (await store.transitionList({ tenantId, eventId: id, limit: 10 })).map((t) => t.toState),
            ['scheduled', 'executing', 'succeeded'],
          );
      }));

    it("settles pulled events with a statement per Citus shard on its worker, each event's trace kept", () =>
      withFresh(async (store, schema) => {
        const workers = store.citusWorkers!;
        const tenantId = await newTenant(store);
        await pullDestination(store, tenantId);
        const ids = Array.from({ length: 40 }, (_, i) => `p${i}`);
        await insertAll(
          store,
          ids.map((id) => newEvent(tenantId, id, { shard: shardOf(tenantId, id, 256), destination: { name: 'jobs' } })),
        );
        const claimed = await store.eventPullClaim(pullClaimParams(tenantId, { max: 40, receipt: 'rc' }));
        assert.equal(claimed.length, 40);
        const citusShards = new Set(
          (
            await admin!.query<{ id: string }>(
              `SELECT get_shard_id_for_distribution_column('"${schema}".events', s)::text AS id FROM unnest($1::int[]) s`,
              [claimed.map((e) => e.shard)],
            )
          ).rows.map((r) => r.id),
        );
        const before = workers.counts.done;
        const settled = await store.eventPullSettleMany({
          settles: [
            ...claimed.map((e) => ({
              tenantId,
              id: e.id,
              receipt: 'rc',
              attempts: 1,
              action: 'ack' as const,
              to: 'succeeded' as const,
              now: T0 + 21 * SEC,
            })),
            { tenantId, id: 'nope', receipt: 'rc', attempts: 1, action: 'ack', to: 'succeeded', now: T0 + 21 * SEC },
          ],
        });
        assert.deepEqual(
          settled.map((e) => e?.state ?? null),
          [...claimed.map(() => 'succeeded'), null],
        );
        assert.equal(workers.counts.done - before, citusShards.size, 'one statement per Citus shard, on its worker');
        for (const e of claimed.slice(0, 3))
          assert.deepEqual(
            (await store.transitionList({ tenantId, eventId: e.id, limit: 10 })).map((t) => t.toState),
            ['scheduled', 'executing', 'succeeded'],
          );
      }));
  });
}

/**
 * Every Citus statement is either hot, and then runs on one shard (its plan's Task Count is 1 for
 * every step), or spans shards on purpose, named here with what bounds it.
 */
const SPANS_SHARDS: Partial<Record<CitusQueryName, string>> = {
  eventInsertMany: "an insert batch: the batch's events, at most the tenant's batchEventsMax (1,000)",
  locatorInsert: 'the locator rows of an insert batch, as eventInsertMany',
  locatorGetMany: 'the events a batch or a bulk step names (at most 1,000), one index probe per shard',
  locatorDelete: "a retention pass's deleted ids (its limit)",
  shardsToRescue: 'the executing rows of every shard (events_executing): the deliveries in flight',
  shardsOfOwners: 'the executing rows of every shard (events_executing): the deliveries in flight',
  deleteTerminalShards: "the retention pass's limit of oldest candidates, one index range per shard",
  queueShards: "one queue's fireable rows due by now (events_queue_due), per shard",
  pullCandidates: "a pull claim's examine bound (max × 4, at least 100) of one queue, per shard",
};

if (!skip) {
  describe('PostgresStore on Citus: one shard per hot statement', () => {
    it('plans every hot statement as a router query (one task), and names every statement that spans shards', async () => {
      const schema = freshSchema();
      const store = await openFresh(schema);
      const db = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
      await db.connect();
      try {
        const t = 'tenant';
        const id = 'evt';
        const shard = 7;
        // Two Belfry shards that one Citus shard holds: what a statement over a group names.
        const placed = await db.query<{ shard: number; id: string }>(
          `SELECT s AS shard, get_shard_id_for_distribution_column('events', s)::text AS id FROM generate_series(0, 255) s`,
        );
        const citusShard = placed.rows.find((r) => r.shard === shard)!.id;
        const group = placed.rows.filter((r) => r.id === citusShard).map((r) => r.shard);
        assert.ok(group.length >= 2, `Belfry shards of one Citus shard: ${JSON.stringify(group)}`);
        const now = Date.UTC(2026, 0, 1);
        const hot: Partial<Record<CitusQueryName, unknown[]>> = {
          eventGet: [t, id, shard],
          eventGetMany: [group, [t], [id]],
          locatorGet: [3, t, id],
          eventClaim: [[t], [id], [1], 'node-a', now + 1, now, '{}', true, group],
          eventGroupLock: [[t], [id], group],
          eventGroupFirst: [t, 'g', shard],
          eventRecordAttempts: [[t], [id], [2], ['node-a'], ['succeeded'], [null], [200], [null], [5], now, group],
          eventCancel: [now, t, id, 1, 'scheduled', null, null, shard],
          eventReplay: [now, t, id, 1, 'archived', '{}', shard],
          eventEdit: [now, now, '{}', '{}', '{"name":"d"}', null, 'h', now, t, id, 1, '{}', 'name:d', null, shard],
          transitionList: [t, id, 0, 100, shard],
          eventListDueGroupSkip: [now, 0, '', '', 100, 20, [t], ['name:d'], [now], [id], 160, group],
          eventListDueGroup: [now, 0, '', '', 100, 20, group],
          eventListDueQueue: [t, 'name:d', now, 0, '', 100, null, shard],
          eventRescue: [now, null, 100, now, null, shard],
          eventRescueDead: [['node-a'], 1000, 100, now, shard],
          eventDeleteTerminal: [t, 'succeeded', now, 100, shard],
          pullClaim: [t, 'name:q', now, 100, 10, now + 1, 'r', '{}', shard, null],
          pullGroupLock: [t, 'name:q', now, 100, shard, null],
          pullSettleMany: [[t], [id], ['r'], [null], ['succeeded'], [null], [null], [now], ['{}'], shard],
          pullExtend: [t, id, 'r', now, now, shard],
          pullDestinations: [[t], ['d']],
        };
        const names = Object.keys(CITUS_SQL) as CitusQueryName[];
        assert.deepEqual(
          names.filter((n) => !(n in hot) && !(n in SPANS_SHARDS)),
          [],
          'every statement is hot or named as spanning shards',
        );
        const tasks = async (sql: string, values: unknown[]) => {
          const plan = (await db.query(`EXPLAIN ${sql}`, values)).rows.map((r) => r['QUERY PLAN'] as string);
          return [...plan.join('\n').matchAll(/Task Count: (\d+)/g)].map((m) => Number(m[1]));
        };
        for (const [name, values] of Object.entries(hot)) {
          const counts = await tasks(CITUS_SQL[name as CitusQueryName], values!);
          assert.ok(
            counts.length > 0 && counts.every((n) => n === 1),
            `${name}: task counts ${JSON.stringify(counts)}`,
          );
        }
        // The statements made outside CITUS_SQL: a state change's transitions, a schedule's occurrence made again.
        assert.deepEqual(
          await tasks(
            `INSERT INTO transitions (shard, tenant_id, event_id, seq, at, kind, from_state, to_state, attempt, status, error,
               duration_ms, lateness_ms, detail) VALUES ($1::int, $2::text, $3::text, 2, 0, 'state', 'scheduled', 'executing', 1,
               NULL, NULL, NULL, 0, NULL), ($5::int, $2::text, $4::text, 2, 0, 'state', 'scheduled', 'executing', 1, NULL, NULL,
               NULL, 0, NULL)`,
            [group[0], t, id, 'other', group[1]],
          ),
          [1],
        );
        assert.deepEqual(
          await tasks(CITUS_OCCURRENCE_REVIVE, [
            t,
            id,
            shard,
            null,
            now,
            '{"name":"d"}',
            'd',
            '{}',
            '{}',
            null,
            null,
            '{}',
            'h',
            'name:d',
            null,
            now,
          ]),
          [1],
        );
        // A spanning statement really spans (so the check above can tell the two apart).
        const spread = await tasks(CITUS_SQL.pullCandidates, [t, 'name:q', now, 100, null]);
        assert.ok(
          spread.some((n) => n > 1),
          `pullCandidates: ${JSON.stringify(spread)}`,
        );
      } finally {
        await db.end();
        await store.close();
        await admin!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      }
    });
  });
}
