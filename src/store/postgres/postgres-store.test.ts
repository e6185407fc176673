/**
 * The PostgreSQL backend against the Store conformance suite, on a real server: every store gets
 * a fresh schema with a random name, dropped (CASCADE) in its cleanup. Then what only this
 * backend has: concurrent migrations, concurrent claimers, relaxed durability, the database clock.
 *
 * The server is BELFRY_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres).
 * When it cannot be reached the suite fails, naming the server and the error: CI always has one,
 * and a suite that quietly passes without its database proves nothing. BELFRY_SKIP_POSTGRES=1
 * (a machine without PostgreSQL, on purpose) skips it instead, saying so on stderr and in the
 * test's skip reason.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import type { EventRecord } from '../../core/event.ts';
import { runStoreConformance } from '../conformance/store-conformance.ts';
import { checkCreatedTransitionReadFromRow } from '../conformance/created-transition.ts';
import { checkScheduleSpecFieldsFilled } from '../conformance/schedule-spec-fields.ts';
import {
  insertAll,
  mustClaim,
  mustRecord,
  newEvent,
  outcome,
  pullClaimParams,
  pullDestination,
  T0,
  SEC,
} from '../conformance/fixtures.ts';
import type { NewEvent } from '../store.ts';
import { createPool } from './db.ts';
import { loadMigrations, migrate } from './migrate.ts';
import { perShardLimit } from './due-list.ts';
import { LIST_EXAMINED_ROWS_MAX } from '../event-list-plan.ts';
import { SQL, TX, type QueryName } from './queries.ts';
import { openPostgresStore, POSTGRES_CLAIM_POOL_SIZE, type PostgresStore } from './postgres-store.ts';

const URL = process.env.BELFRY_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const admin = new pg.Pool({ connectionString: URL, max: 2 });
admin.on('error', () => {});
const unreachable: string | null = await admin
  .query('SELECT 1')
  .then(() => null)
  .catch((err: Error) => `PostgreSQL at ${URL} is not reachable (${err.message}); set BELFRY_TEST_POSTGRES_URL`);

const schemas = new Set<string>();
function freshSchema(): string {
  const schema = `belfry_test_${randomBytes(6).toString('hex')}`;
  schemas.add(schema);
  return schema;
}
async function dropSchema(schema: string): Promise<void> {
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  schemas.delete(schema);
}
after(async () => {
  for (const schema of [...schemas]) await dropSchema(schema).catch(() => {});
  await admin.end();
});

if (unreachable !== null) {
  const skip = process.env.BELFRY_SKIP_POSTGRES === '1';
  if (skip)
    console.error(
      `SKIPPED: the PostgreSQL store's conformance suite and tests, BELFRY_SKIP_POSTGRES=1: ${unreachable}`,
    );
  describe('Store conformance: postgres', () => {
    it('needs a PostgreSQL server', (t) => {
      if (skip) return t.skip(`BELFRY_SKIP_POSTGRES=1: ${unreachable}`);
      assert.fail(
        `${unreachable}. Start PostgreSQL (.ci/services.sh), or set BELFRY_SKIP_POSTGRES=1 to skip these tests on purpose`,
      );
    });
  });
} else {
  runStoreConformance('postgres', async () => {
    const schema = freshSchema();
    const store = await openPostgresStore({ url: URL, schema, poolSize: 4 });
    return {
      store,
      cleanup: async () => {
        await store.close();
        await dropSchema(schema);
      },
      reopen: () => openPostgresStore({ url: URL, schema, poolSize: 4 }),
    };
  });

  describe('PostgresStore specifics', () => {
    /** Runs `fn` on a store in a fresh schema, dropped afterwards. */
    async function withStore(fn: (store: PostgresStore, schema: string) => Promise<void>, poolSize = 4): Promise<void> {
      const schema = freshSchema();
      const store = await openPostgresStore({ url: URL, schema, poolSize });
      try {
        await fn(store, schema);
      } finally {
        await store.close();
        await dropSchema(schema);
      }
    }

    it('names its capabilities and keeps every table in its own schema', async () => {
      await withStore(async (store, schema) => {
        assert.deepEqual(store.capabilities, { multiNode: true });
        assert.ok(store.dueWakeups);
        const tables = await admin.query<{ table_name: string }>(
          `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
          [schema],
        );
        assert.deepEqual(
          tables.rows.map((r) => r.table_name),
          [
            'api_keys',
            'bulk_jobs',
            'claim_leases',
            'destinations',
            'events',
            'leader_lease',
            'nodes',
            'schedule_count_writes',
            'schedules',
            'schema_migrations',
            'shard_assignments',
            'sources',
            'store_settings',
            'tenants',
            'transitions',
          ],
        );
      });
    });

    it('claims on a pool of its own whose commits do not wait for the WAL flush; every other write does', async () => {
      await withStore(async (store) => {
        const setting = async (pool: pg.Pool) =>
          (await pool.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0].synchronous_commit;
        assert.notEqual(store.claimPool, store.pool);
        assert.equal(await setting(store.claimPool), 'off');
        assert.notEqual(await setting(store.pool), 'off', 'inserts, outcomes and edits commit as the server is set');
      });
    });

    it('warms the claims’ pool before the first claim: every connection open and its claim prepared, nothing written', async () => {
      await withStore(async (store) => {
        const [due] = await insertAll(store, [newEvent('warm', 'warm-due', { fireAt: T0 - SEC })]);
        assert.equal(store.claimPool.totalCount, 0, 'a new store opens no claim connection');
        await store.warmUp?.(256);
        assert.equal(store.claimPool.totalCount, POSTGRES_CLAIM_POOL_SIZE);
        assert.equal(store.claimPool.idleCount, POSTGRES_CLAIM_POOL_SIZE, 'each connection is back in the pool');
        // The statement is prepared on each connection (node-postgres names it belfry_eventClaim).
        const clients = await Promise.all(
          Array.from({ length: POSTGRES_CLAIM_POOL_SIZE }, () => store.claimPool.connect()),
        );
        try {
          for (const client of clients) {
            const { rows } = await client.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name = 'belfry_eventClaim'`,
            );
            assert.equal(rows[0].n, 1);
          }
        } finally {
          for (const client of clients) client.release();
        }
        const stored = await store.eventGet({ tenantId: due.tenantId, id: 'warm-due' });
        assert.equal(stored?.state, 'scheduled');
        assert.equal(stored?.version, due.version);
      });
    });

    it('stores no `created` transition: the trace reads it from the event row', async () => {
      await withStore(async (store, schema) => {
        await checkCreatedTransitionReadFromRow(store, {
          transitionRows: async () =>
            (await admin.query(`SELECT count(*)::int AS n FROM "${schema}".transitions`)).rows[0].n,
        });
      });
    });

    it("writes each transition with its event's shard (the distribution column of both on Citus)", async () => {
      await withStore(async (store, schema) => {
        const tenantId = 'shards';
        await store.tenantCreate({ id: tenantId, name: tenantId, settings: {}, createdAt: T0 });
        const [a, b] = await insertAll(store, [
          newEvent(tenantId, 'a', { shard: 3 }),
          newEvent(tenantId, 'b', { shard: 7 }),
        ]);
        const running = await mustClaim(store, a, T0 + 10 * SEC);
        await mustRecord(store, outcome(running, 'succeeded', { status: 204 }), T0 + 11 * SEC);
        const canceled = await store.eventCancel({ tenantId, id: b.id, now: T0 + 12 * SEC });
        assert.equal(canceled.kind, 'ok');
        const rows = await admin.query<{ event_id: string; shard: number | null; event_shard: number }>(
          `SELECT t.event_id, t.shard, e.shard AS event_shard FROM "${schema}".transitions t
             JOIN "${schema}".events e ON e.tenant_id = t.tenant_id AND e.id = t.event_id ORDER BY t.event_id, t.seq`,
        );
        assert.deepEqual(
          rows.rows.map((r) => [r.event_id, r.shard, r.event_shard]),
          [
            ['a', 3, 3],
            ['a', 3, 3],
            ['b', 7, 7],
          ],
        );
      });
    });

    it('fills the spec fields of schedules stored before them (migration 019)', async () => {
      await withStore(async (store, schema) => {
        await checkScheduleSpecFieldsFilled(store, {
          setSpecText: async (tenantId, id, spec) =>
            void (await admin.query(`UPDATE "${schema}".schedules SET spec = $1 WHERE tenant_id = $2 AND id = $3`, [
              spec,
              tenantId,
              id,
            ])),
          migrateAgain: async (version) => {
            await admin.query(`DELETE FROM "${schema}".schema_migrations WHERE version = $1`, [version]);
            await store.migrate();
          },
        });
      });
    });

    it('refuses a schema name that would need quoting', async () => {
      await assert.rejects(openPostgresStore({ url: URL, schema: 'Bad"Name' }), RangeError);
    });

    it('applies each migration exactly once when four processes migrate a fresh schema at once', async () => {
      const schema = freshSchema();
      const pools = [1, 2, 3, 4].map(() => createPool({ url: URL, schema, size: 1, onError: () => {} }));
      try {
        const versions = loadMigrations().map((m) => m.version);
        const applied = await Promise.all(pools.map((pool) => migrate(pool, schema)));
        assert.deepEqual(
          applied.flat().sort((a, b) => a - b),
          versions,
          'each version applied by exactly one of them',
        );
        assert.equal(applied.filter((a) => a.length > 0).length, 1, 'the first holder of the lock applied all');
        const ledger = await admin.query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
        assert.deepEqual(
          ledger.rows.map((r) => r.version),
          versions,
        );
        assert.deepEqual(await Promise.all(pools.map((pool) => migrate(pool, schema))), [[], [], [], []]);
      } finally {
        await Promise.all(pools.map((pool) => pool.end()));
        await dropSchema(schema);
      }
    });

    it('merges per-shard due scans exactly, also when one shard holds most of the backlog', async () => {
      await withStore(async (store) => {
        await store.tenantCreate({ id: 'due', name: 'due', settings: {}, createdAt: T0 });
        let seed = 7;
        const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
        const events: NewEvent[] = [];
        for (let i = 0; i < 600; i++) {
          // Shard 5 takes half of everything; the rest spread over 39 shards; due times collide often.
          const shard = i % 2 === 0 ? 5 : Math.floor(random() * 40);
          events.push(
            newEvent('due', `d${String(i).padStart(4, '0')}`, { shard, fireAt: T0 + Math.floor(random() * 50) * SEC }),
          );
        }
        await insertAll(store, events);
        const key = (e: { dueAt?: number; fireAt?: number; id: string }) => [e.dueAt ?? e.fireAt, e.id] as const;
        const byKey = (a: readonly [number | undefined, string], b: readonly [number | undefined, string]) =>
          a[0]! - b[0]! || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0);
        for (const [shards, limit] of [
          [null, 7],
          [null, 50],
          [[5, 1, 2, 3], 13],
          [[...Array(40).keys()], 100],
        ] as const) {
          const wanted = events.filter((e) => shards === null || (shards as readonly number[]).includes(e.shard));
          const expected = wanted
            .map((e) => key(e))
            .sort(byKey)
            .map((k) => k[1]);
          const seen: string[] = [];
          let after: { dueAt: number; tenantId: string; id: string } | null = null;
          for (let page = 0; page < 1_000; page++) {
            const refs = await store.eventListDue({
              shards: shards === null ? null : [...shards],
              after,
              untilMs: T0 + 60 * SEC,
              limit,
            });
            seen.push(...refs.map((r) => r.id));
            if (refs.length < limit) break;
            const last = refs[refs.length - 1];
            after = { dueAt: last.dueAt, tenantId: last.tenantId, id: last.id };
          }
          assert.deepEqual(seen, expected, `shards ${JSON.stringify(shards)}, pages of ${limit}`);

          // With the queue skipped from its third of the way on: the rows before, a skipped row only
          // as the last of a page (where the next one starts), until an empty page.
          const markAt = wanted.find((e) => e.id === expected[Math.floor(expected.length / 3)])!;
          const skip = [{ tenantId: 'due', queue: 'name:orders', from: { dueAt: markAt.fireAt!, id: markAt.id } }];
          const kept: string[] = [];
          const sent: string[] = [];
          let from: { dueAt: number; tenantId: string; id: string } | null = null;
          for (let page = 0; page < 1_000; page++) {
            const refs = await store.eventListDue({
              shards: shards === null ? null : [...shards],
              after: from,
              untilMs: T0 + 60 * SEC,
              limit,
              skip,
            });
            if (refs.length === 0) break;
            assert.ok(refs.length <= limit);
            for (const r of refs) sent.push(r.id);
            for (const r of refs.slice(0, -1))
              assert.ok(byKey(key(r), key(markAt)) < 0, `only the last row of a page is a skipped one (${r.id})`);
            kept.push(...refs.filter((r) => byKey(key(r), key(markAt)) < 0).map((r) => r.id));
            const last = refs[refs.length - 1];
            from = { dueAt: last.dueAt, tenantId: last.tenantId, id: last.id };
          }
          assert.deepEqual(
            kept,
            expected.slice(0, Math.floor(expected.length / 3)),
            `skip: shards ${JSON.stringify(shards)}, pages of ${limit}`,
          );
          assert.ok(sent.length - kept.length <= 1_000, 'at most one skipped row per page');
        }
      });
    });

    it('walks one index backward per list page, without statistics too (never a bitmap read of the tenant and a sort)', async () => {
      await withStore(async (store, schema) => {
        // 200k rows of one tenant, never analyzed: the planner guesses the tenant at 0.5% of them.
        await admin.query(`INSERT INTO "${schema}".events (seq, tenant_id, id, shard, state, version, fire_at, due_at,
            destination, payload, headers, grp, tags, request_hash, created_at, updated_at, type, queue)
          SELECT i, 'one', 'e' || i, i % 256, (ARRAY['scheduled','succeeded','archived'])[1 + i % 3], 1, i, i,
            '{"name":"orders"}', '{}', '{}', CASE WHEN i % 10 = 0 THEN 'g' || (i % 100) END, '{}', 'h', 0, 0,
            CASE WHEN i % 7 = 0 THEN 't' || (i % 3) END, 'name:orders'
          FROM generate_series(1, 200000) AS i`);
        const top = ['one', Number.MAX_SAFE_INTEGER];
        const walks: [QueryName, string, unknown[]][] = [
          ['eventListByTenant', 'events_tenant_seq', [...top, null, null, null, null, null, 1_001, 1_001, null]],
          [
            'eventListByTenant',
            'events_tenant_seq',
            [...top, null, null, null, 5, 50, LIST_EXAMINED_ROWS_MAX, 101, null],
          ],
          [
            'eventListByState',
            'events_tenant_state_seq',
            [...top, 'scheduled', null, null, null, null, 1_001, 1_001, null],
          ],
          [
            'eventListByDestination',
            'events_tenant_queue_seq',
            [...top, 'succeeded', 'orders', null, null, null, LIST_EXAMINED_ROWS_MAX, 101, null],
          ],
          ['eventListByGroup', 'events_tenant_grp_seq', [...top, null, null, 'g10', null, null, 1_001, 1_001, null]],
          ['eventListByType', 'events_tenant_type_seq', [...top, null, null, null, null, null, 1_001, 1_001, 't1']],
        ];
        const client = await store.pool.connect();
        try {
          for (const [name, index, values] of walks) {
            await client.query(TX.beginOrderedWalk);
            try {
              const plan = (
                await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${SQL[name]}`, values)
              ).rows
                .map((r) => r['QUERY PLAN'])
                .join('\n');
              assert.match(plan, new RegExp(`Index Scan Backward using ${index} on events`), `${name}:\n${plan}`);
              assert.doesNotMatch(plan, /Bitmap|Seq Scan on events/, `${name}:\n${plan}`);
            } finally {
              await client.query('ROLLBACK');
            }
          }
        } finally {
          client.release();
        }
        const page = await store.eventList({ tenantId: 'one', state: 'archived', limit: 3 });
        assert.deepEqual(
          page.events.map((e) => e.seq),
          [200_000, 200_000 - 3, 200_000 - 6],
          'i % 3 = 2: archived',
        );
      });
    });

    it('counts a forecast with index range scans of events_forecast, per tenant, without statistics too (never the table)', async () => {
      await withStore(async (store, schema) => {
        // 200k rows of two tenants, a third scheduled, due over ~55 hours, never analyzed.
        await admin.query(
          `INSERT INTO "${schema}".tenants (id, name, settings, created_at) VALUES ('one', 'one', '{}', 0), ('two', 'two', '{}', 0)`,
        );
        await admin.query(`INSERT INTO "${schema}".events (seq, tenant_id, id, shard, state, version, fire_at, due_at,
            destination, payload, headers, grp, tags, request_hash, created_at, updated_at, queue)
          SELECT i, CASE WHEN i % 2 = 0 THEN 'one' ELSE 'two' END, 'e' || i, i % 256, (ARRAY['scheduled','succeeded','archived'])[1 + i % 3],
            1, i * 1000, i * 1000, '{"name":"orders"}', '{}', '{}', NULL, '{}', 'h', 0, 0, 'name:d' || (i % 5)
          FROM generate_series(1, 200000) AS i`);
        const plans: [QueryName, unknown[]][] = [
          ['eventForecastTenant', ['one', 3_600_000, 7_200_000, 60_000, 'destination']],
          ['eventForecastAll', [3_600_000, 7_200_000, 60_000, 'tenant']],
        ];
        const client = await store.pool.connect();
        try {
          await client.query(`SET search_path TO "${schema}"`);
          for (const [name, values] of plans) {
            const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${SQL[name]}`, values)).rows
              .map((r) => r['QUERY PLAN'])
              .join('\n');
            assert.match(plan, /Index (Only )?Scan using events_forecast on events/, `${name}:\n${plan}`);
            assert.doesNotMatch(plan, /Seq Scan on events|Bitmap/, `${name}:\n${plan}`);
          }
        } finally {
          client.release();
        }
        const rows = await store.eventForecast({
          tenantId: 'one',
          fromMs: 3_600_000,
          toMs: 7_200_000,
          bucketMs: 60_000,
          by: 'none',
        });
        // Tenant one: even i; scheduled: i % 3 = 0; so i % 6 = 0, one per 6 s: 10 per minute.
        assert.equal(rows.length, 60);
        assert.ok(
          rows.every((r) => r.n === 10 && r.key === null),
          JSON.stringify(rows.slice(0, 3)),
        );
      });
    });

    it('sizes per-shard reads to about twice an even share, never above what is wanted', () => {
      assert.equal(perShardLimit(2_000, 128), 40);
      assert.equal(perShardLimit(2_000, 1), 2_000);
      assert.equal(perShardLimit(5, 256), 5);
      assert.equal(perShardLimit(100, 0), 100);
    });

    it('never lets two concurrent claimers (two pools, as two nodes) claim the same event', async () => {
      await withStore(async (store, schema) => {
        const other = await openPostgresStore({ url: URL, schema, poolSize: 4 });
        try {
          const tenantId = 'race';
          await store.tenantCreate({ id: tenantId, name: tenantId, settings: {}, createdAt: T0 });
          const events: NewEvent[] = [];
          for (let i = 0; i < 2_000; i++) events.push(newEvent(tenantId, `e${i}`, { shard: i % 8 }));
          const stored = await insertAll(store, events);
          const refs = stored.map((e) => ({ tenantId, id: e.id, version: e.version }));
          const now = T0 + 20 * SEC;
          /** Claims every ref in batches of 100, several batches in flight, in its own order. */
          const claimer = async (s: PostgresStore, owner: string, order: typeof refs) => {
            const batches: (typeof refs)[] = [];
            for (let i = 0; i < order.length; i += 100) batches.push(order.slice(i, i + 100));
            const got = await Promise.all(
              batches.map((b) => s.eventClaim({ refs: b, now, owner, leaseUntil: now + 60 * SEC })),
            );
            return got.flat();
          };
          const [a, b] = await Promise.all([
            claimer(store, 'node-a', refs),
            claimer(other, 'node-b', [...refs].reverse()),
          ]);
          const idsA = new Set(a.map((e) => e.id));
          assert.ok(
            b.every((e) => !idsA.has(e.id)),
            'no event claimed by both',
          );
          assert.equal(a.length + b.length, 2_000, 'every event claimed once');
          const traces = await admin.query(
            `SELECT count(*)::int AS n FROM "${schema}".transitions WHERE to_state = 'executing'`,
          );
          assert.equal(traces.rows[0].n, 2_000, 'one claim transition per event');
        } finally {
          await other.close();
        }
      });
    });

    it('renews claim leases without touching, or waiting for, the claimed events (no deadlock with outcomes)', async () => {
      await withStore(async (store, schema) => {
        const tenantId = 'renew';
        await store.tenantCreate({ id: tenantId, name: tenantId, settings: {}, createdAt: T0 });
        const stored = await insertAll(store, [newEvent(tenantId, 'held'), newEvent(tenantId, 'free')]);
        const now = T0 + 20 * SEC;
        const refs = stored.map((e) => ({ tenantId, id: e.id, version: e.version }));
        assert.equal((await store.eventClaim({ refs, now, owner: 'node-a', leaseUntil: now + 15 * SEC })).length, 2);
        // Another transaction holds 'held' (as an outcome being recorded would) and does not let go.
        const holder = await admin.connect();
        try {
          await holder.query('BEGIN');
          await holder.query(`SELECT 1 FROM "${schema}".events WHERE tenant_id = $1 AND id = 'held' FOR UPDATE`, [
            tenantId,
          ]);
          const renewed = await Promise.race([
            store.claimLeaseRenew({ owner: 'node-a', leaseUntil: now + 30 * SEC }).then(() => 'renewed'),
            new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 5_000).unref()),
          ]);
          assert.equal(renewed, 'renewed');
        } finally {
          await holder.query('ROLLBACK');
          holder.release();
        }
        const versions = await admin.query(`SELECT id, xmin::text FROM "${schema}".events ORDER BY id`);
        await store.claimLeaseRenew({ owner: 'node-a', leaseUntil: now + 45 * SEC });
        assert.deepEqual(
          (await admin.query(`SELECT id, xmin::text FROM "${schema}".events ORDER BY id`)).rows,
          versions.rows,
          'no event row rewritten',
        );
        // Both claims live on past their own 15 s lease.
        assert.deepEqual(
          await store.eventRescue({ leaseExpiredBefore: now + 40 * SEC, now: now + 40 * SEC, limit: 10 }),
          [],
        );
      });
    });

    it('keeps one member per group executing while two nodes claim and finish groups concurrently', async () => {
      await withStore(async (store, schema) => {
        const other = await openPostgresStore({ url: URL, schema, poolSize: 4 });
        try {
          const tenantId = 'groups';
          await store.tenantCreate({ id: tenantId, name: tenantId, settings: {}, createdAt: T0 });
          const events: NewEvent[] = [];
          for (let g = 0; g < 20; g++) {
            for (let m = 0; m < 10; m++)
              events.push(newEvent(tenantId, `g${g}-m${m}`, { group: `g${g}`, fireAt: T0 + m, shard: g % 4 }));
          }
          await insertAll(store, events);
          const order: string[] = [];
          const node = async (s: PostgresStore, owner: string) => {
            for (let round = 0; round < 1_000; round++) {
              const due = await s.eventListDue({ shards: null, after: null, untilMs: T0 + 60 * SEC, limit: 100 });
              const running = await admin.query(
                `SELECT count(*)::int AS n FROM "${schema}".events WHERE state = 'executing'`,
              );
              if (due.length === 0 && running.rows[0].n === 0) return;
              const claimed: EventRecord[] = await s.eventClaim({
                refs: due,
                now: T0 + SEC,
                owner,
                leaseUntil: T0 + 60 * SEC,
              });
              const busy = await admin.query(
                `SELECT grp, count(*)::int AS n FROM "${schema}".events WHERE state = 'executing' GROUP BY grp HAVING count(*) > 1`,
              );
              assert.deepEqual(busy.rows, [], 'at most one executing member per group');
              for (const e of claimed) order.push(e.id);
              const applied = await s.eventRecordAttempts({
                outcomes: claimed.map((e) => ({
                  tenantId,
                  id: e.id,
                  version: e.version,
                  owner,
                  to: 'succeeded' as const,
                  durationMs: 1,
                })),
                now: T0 + 2 * SEC,
              });
              assert.ok(applied.every(Boolean));
            }
            assert.fail('the groups never drained');
          };
          await Promise.all([node(store, 'node-a'), node(other, 'node-b')]);
          assert.equal(order.length, 200, 'each member claimed exactly once');
          for (let g = 0; g < 20; g++) {
            const members = order.filter((id) => id.startsWith(`g${g}-`));
            assert.deepEqual(
              members,
              [...Array(10).keys()].map((m) => `g${g}-m${m}`),
              `group g${g} fired in order`,
            );
          }
        } finally {
          await other.close();
        }
      });
    });

    it('serialises claims of one group: a claim waits for one in flight, then sees its member executing', async () => {
      await withStore(async (store, schema) => {
        const tenantId = 'race';
        await store.tenantCreate({ id: tenantId, name: tenantId, settings: {}, createdAt: T0 });
        await pullDestination(store, tenantId);
        for (const kind of ['push', 'pull'] as const) {
          const group = `g-${kind}`;
          const destination = { name: kind === 'pull' ? 'jobs' : 'orders' };
          await insertAll(store, [newEvent(tenantId, `${group}-head`, { group, destination, fireAt: T0 + 10 * SEC })]);
          // A claim of the head in flight: it holds the group's lock and has not committed.
          const inFlight = await admin.connect();
          try {
            await inFlight.query('BEGIN');
            await inFlight.query(`SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(10) || $2, 0))`, [
              tenantId,
              group,
            ]);
            await inFlight.query(
              `UPDATE "${schema}".events SET state = 'executing', version = version + 1, attempts = 1, lease_owner = 'pull', receipt = 'r0', lease_until = $3
                WHERE tenant_id = $1 AND id = $2`,
              [tenantId, `${group}-head`, T0 + 60 * SEC],
            );
            // Meanwhile a member with an earlier fireAt is created, and another claim starts.
            const [early] = await insertAll(
              store,
              [newEvent(tenantId, `${group}-early`, { group, destination, fireAt: T0 })],
              T0 + 11 * SEC,
            );
            const claim =
              kind === 'pull'
                ? store.eventPullClaim(
                    pullClaimParams(tenantId, { now: T0 + 12 * SEC, leaseUntil: T0 + 60 * SEC, receipt: 'r1' }),
                  )
                : store.eventClaim({
                    refs: [{ tenantId, id: early.id, version: early.version, group }],
                    now: T0 + 12 * SEC,
                    owner: 'node-b',
                    leaseUntil: T0 + 60 * SEC,
                  });
            const deadline = Date.now() + 10_000;
            for (;;) {
              const waiting = await admin.query(
                `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`,
              );
              if (waiting.rows[0].n > 0) break;
              assert.ok(Date.now() < deadline, `the ${kind} claim never waited for the group's lock`);
              await new Promise((r) => setImmediate(r));
            }
            await inFlight.query('COMMIT');
            assert.deepEqual(
              (await claim).map((e) => e.id),
              [],
              `${kind}: the early member waits while the head executes`,
            );
          } finally {
            inFlight.release();
          }
        }
      });
    });

    it('commits the inserts of relaxed tenants with synchronous_commit off, and only theirs', async () => {
      await withStore(async (store) => {
        await store.tenantCreate({ id: 'fast', name: 'fast', settings: { durability: 'relaxed' }, createdAt: T0 });
        await store.tenantCreate({ id: 'safe', name: 'safe', settings: { durability: 'strict' }, createdAt: T0 });
        // Each COMMIT this store sends reports the setting in force inside its transaction.
        const atCommit: string[] = [];
        const wrapped = new WeakSet<pg.PoolClient>();
        store.pool.on('acquire', (client: pg.PoolClient) => {
          if (wrapped.has(client)) return;
          wrapped.add(client);
          const query = client.query.bind(client) as (...args: unknown[]) => unknown;
          (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
            if (args[0] !== 'COMMIT') return query(...args);
            return (
              query(`SELECT current_setting('synchronous_commit') AS s`) as Promise<pg.QueryResult<{ s: string }>>
            ).then((r) => {
              atCommit.push(r.rows[0].s);
              return query(...args);
            });
          };
        });

        await insertAll(store, [newEvent('fast', 'f1'), newEvent('fast', 'f2')]);
        assert.deepEqual(atCommit, ['off'], 'relaxed: its own transaction, synchronous_commit off');
        await insertAll(store, [newEvent('safe', 's1')]);
        await insertAll(store, [newEvent('fast', 'f3'), newEvent('safe', 's2')]);
        assert.deepEqual(atCommit, ['off'], 'strict and mixed batches commit as the server is configured');
        const session = await store.pool.query<{ s: string }>(`SELECT current_setting('synchronous_commit') AS s`);
        assert.equal(session.rows[0].s, 'on', 'SET LOCAL ended with its transaction');
        assert.equal((await store.eventGet({ tenantId: 'fast', id: 'f2' }))?.state, 'scheduled');
        await store.tenantUpdate({ id: 'safe', settings: { durability: 'relaxed' } });
        await insertAll(store, [newEvent('safe', 's3')]);
        assert.deepEqual(atCommit, ['off', 'off'], 'a settings change on this node applies to the next insert');
      }, 1);
    });

    it('times leases and heartbeats by the database clock, not the caller’s', async () => {
      await withStore(async (store) => {
        const realNow = Date.now;
        const skewMs = 3_600_000;
        Date.now = () => realNow() + skewMs; // this process's clock runs an hour fast
        try {
          const dbBefore = await store.timeNow();
          // The caller passes its own (an hour fast) time as `now`: PostgreSQL ignores it.
          const lease = await store.leaderAttemptElect({ nodeId: 'node-a', leaseMs: 60_000, now: Date.now() });
          const { nowMs } = await store.nodeHeartbeat({ nodeId: 'node-a', meta: {}, now: Date.now() });
          const dbAfter = await store.timeNow();
          assert.ok(lease);
          assert.ok(
            lease.expiresAt >= dbBefore + 60_000 && lease.expiresAt <= dbAfter + 60_000,
            'expiry on the database clock',
          );
          assert.ok(nowMs >= dbBefore && nowMs <= dbAfter, 'heartbeat on the database clock');
          assert.ok(Math.abs(dbAfter - (Date.now() - skewMs)) < 60_000, 'the database clock is not the skewed one');
        } finally {
          Date.now = realNow;
        }
      });
    });

    it('shares the lease and the shard map between nodes of one schema', async () => {
      await withStore(async (store, schema) => {
        const other = await openPostgresStore({ url: URL, schema, poolSize: 1 });
        try {
          const [a, b] = await Promise.all([
            store.leaderAttemptElect({ nodeId: 'node-a', leaseMs: 60_000, now: Date.now() }),
            other.leaderAttemptElect({ nodeId: 'node-b', leaseMs: 60_000, now: Date.now() }),
          ]);
          assert.equal([a, b].filter((l) => l !== null).length, 1, 'exactly one of two simultaneous elections wins');
          const winner = (a ?? b)!;
          assert.equal(winner.epoch, 1);
          const leaderStore = a ? store : other;
          assert.equal(
            await leaderStore.shardAssign({
              leaderId: winner.nodeId,
              epoch: 1,
              assignments: [{ shard: 3, nodeId: 'node-b' }],
              now: Date.now(),
            }),
            true,
          );
          assert.deepEqual(await (a ? other : store).shardList(), [{ shard: 3, nodeId: 'node-b', epoch: 1 }]);
        } finally {
          await other.close();
        }
      });
    });
  });
}
