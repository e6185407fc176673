/**
 * The SQLite backend against the Store conformance suite (a fresh file in a fresh temp dir per
 * store), plus what only this backend has: the data-dir lock, the file on disk, its pragmas.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { simulatedClusterTime } from '../conformance/fixtures.ts';
import { runStoreConformance } from '../conformance/store-conformance.ts';
import { checkCreatedTransitionReadFromRow } from '../conformance/created-transition.ts';
import { checkScheduleSpecFieldsFilled } from '../conformance/schedule-spec-fields.ts';
import { LOCK_FILE_NAME } from './data-dir-lock.ts';
import { READER_SQL, SQL } from './queries.ts';
import { openSqliteStore } from './sqlite-store.ts';
import { WRITER_AUTOCHECKPOINT_PAGES } from './checkpointer.ts';
import { loadMigrations } from './migrate.ts';
import type { Connection } from './driver.ts';

/** The value of PRAGMA `name` on `db`. */
function pragma(db: Connection, name: string): unknown {
  return Object.values(db.prepare<Record<string, unknown>>(`PRAGMA ${name}`).get() ?? {})[0];
}

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'belfry-test-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

runStoreConformance(
  'sqlite',
  async () => {
    const dataDir = tempDir();
    const store = await openSqliteStore({ dataDir });
    return {
      store,
      cleanup: async () => {
        await store.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
      reopen: () => openSqliteStore({ dataDir }),
    };
  },
  simulatedClusterTime(),
);

/** Bound on "fails at once": far below the 5 s a busy SQLite connection waits by default. */
const LOCK_REFUSAL_MS_MAX = 2_000;

describe('SqliteStore specifics', () => {
  it('creates the data dir, the database file and its lock; close releases the lock', async () => {
    const dataDir = join(tempDir(), 'nested', 'data');
    const store = await openSqliteStore({ dataDir, fileName: 'custom.db' });
    assert.ok(existsSync(join(dataDir, 'custom.db')));
    assert.ok(existsSync(join(dataDir, LOCK_FILE_NAME)));
    assert.deepEqual(store.capabilities, { multiNode: false });
    await store.close();
    await store.close();
    const again = await openSqliteStore({ dataDir, fileName: 'custom.db' });
    await again.close();
  });

  it('refuses at once a data dir this process holds, naming the dir', async () => {
    const dataDir = tempDir();
    const store = await openSqliteStore({ dataDir });
    try {
      const startedMs = performance.now();
      await assert.rejects(openSqliteStore({ dataDir }), (err: Error) => {
        assert.ok(err.message.includes(`data dir ${dataDir} is in use by another process`), err.message);
        return true;
      });
      assert.ok(performance.now() - startedMs < LOCK_REFUSAL_MS_MAX, 'the refusal waited on the lock');
      await store.ping();
    } finally {
      await store.close();
    }
    const again = await openSqliteStore({ dataDir });
    await again.close();
  });

  it('checkpoints the WAL on a thread of its own; the writer keeps only a far bound of its own', async () => {
    const store = await openSqliteStore({ dataDir: tempDir() });
    try {
      const db = store.db;
      assert.equal(pragma(db, 'wal_autocheckpoint'), WRITER_AUTOCHECKPOINT_PAGES);
      const now = Date.now();
      await store.tenantCreate({ id: 't', name: 't', settings: {}, createdAt: now });
      const events = Array.from({ length: 500 }, (_, i) => ({
        tenantId: 't',
        id: `e-${i}`,
        shard: 0,
        fireAt: now,
        destination: { name: 'd' },
        payload: 'x'.repeat(2000),
        headers: {},
        group: null,
        retry: null,
        expireAt: null,
        tags: {},
        type: null,
        requestHash: '',
      }));
      await store.eventInsertMany({ events, now });
      // Far below the writer's bound: only the checkpointer copies these frames back.
      const deadline = Date.now() + 10_000;
      for (;;) {
        const { last } = await store.checkpointer.stats();
        if (last && last.log > 0 && last.checkpointed === last.log) break;
        assert.ok(
          Date.now() < deadline,
          `the checkpointer copied nothing back within 10 s: ${JSON.stringify(await store.checkpointer.stats())}`,
        );
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok((await store.checkpointer.stats()).last!.log < WRITER_AUTOCHECKPOINT_PAGES);
    } finally {
      await store.close();
    }
  });

  it('stores no `created` transition: the trace reads it from the event row', async () => {
    const store = await openSqliteStore({ dataDir: tempDir() });
    try {
      const db = store.db;
      await checkCreatedTransitionReadFromRow(store, {
        transitionRows: async () => (db.prepare('SELECT count(*) AS n FROM transitions').get() as { n: number }).n,
      });
    } finally {
      await store.close();
    }
  });

  it('fills the spec fields of schedules stored before them (migration 019)', async () => {
    const store = await openSqliteStore({ dataDir: tempDir() });
    try {
      await checkScheduleSpecFieldsFilled(store, {
        setSpecText: async (tenantId, id, spec) =>
          void store.db.prepare('UPDATE schedules SET spec = ? WHERE tenant_id = ? AND id = ?').run(spec, tenantId, id),
        migrateAgain: async (version) => {
          store.db.prepare('DELETE FROM schema_migrations WHERE version = ?').run(version);
          await store.migrate();
        },
      });
    } finally {
      await store.close();
    }
  });

  it('runs WAL with synchronous=FULL and records its migrations', async () => {
    const dataDir = tempDir();
    const store = await openSqliteStore({ dataDir });
    await store.close();
    const reopened = await openSqliteStore({ dataDir });
    try {
      const db = reopened.db;
      assert.equal(pragma(db, 'journal_mode'), 'wal');
      assert.equal(pragma(db, 'synchronous'), 2);
      assert.equal(pragma(db, 'foreign_keys'), 1);
      // Bookkeeping writes commit without their own fsync, and leave FULL in force for the API's.
      await reopened.eventClaim({
        refs: [{ tenantId: 'none', id: 'none', version: 1 }],
        now: 0,
        owner: 'x',
        leaseUntil: 1,
      });
      await reopened.eventRecordAttempts({
        outcomes: [{ tenantId: 'none', id: 'none', version: 1, owner: 'x', to: 'succeeded', durationMs: 1 }],
        now: 0,
      });
      assert.equal(pragma(db, 'synchronous'), 2);
      const versions = db
        .prepare<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')
        .all()
        .map((r) => r.version);
      assert.deepEqual(
        versions,
        loadMigrations().map((m) => m.version),
        'reopening applies nothing twice',
      );
      assert.ok(versions.length >= 4, 'the numbered migrations were found');
    } finally {
      await reopened.close();
    }
  });

  it('walks one index per list page, never the table', async () => {
    const dataDir = tempDir();
    const store = await openSqliteStore({ dataDir });
    try {
      const db = store.db;
      const bind = {
        tenantId: 't',
        beforeSeq: 9,
        state: 's',
        destination: 'd',
        group: 'g',
        type: 'k',
        fromMs: 1,
        toMs: 2,
        examine: 10,
        limit: 5,
      };
      const walks: [keyof typeof SQL, string][] = [
        ['eventListByTenant', 'events_tenant_seq'],
        ['eventListByState', 'events_tenant_state_seq'],
        ['eventListByDestination', 'events_tenant_queue_seq'],
        ['eventListByGroup', 'events_tenant_grp_seq'],
        ['eventListByType', 'events_tenant_type_seq'],
        ['eventListWalkType', 'events_tenant_type_seq'],
        ['eventListWalkState', 'events_tenant_state_seq'],
      ];
      for (const [name, index] of walks) {
        const plan = db
          .prepare<{ detail: string }>(`EXPLAIN QUERY PLAN ${SQL[name]}`)
          .all(bind)
          .map((r) => r.detail);
        assert.ok(
          plan.some((d) => d.includes(`USING COVERING INDEX ${index} (tenant_id=?`)),
          `${name}: ${plan.join(' | ')}`,
        );
        assert.ok(
          !plan.some((d) => /^SCAN events\b/.test(d) || d.includes('TEMP B-TREE')),
          `${name} scans or sorts: ${plan.join(' | ')}`,
        );
      }
    } finally {
      await store.close();
    }
  });

  it('counts a forecast with covering range scans of events_forecast, per tenant, never the table', async () => {
    const dataDir = tempDir();
    const store = await openSqliteStore({ dataDir });
    try {
      const db = store.db;
      const bind = { tenantId: 't', fromMs: 0, toMs: 3_600_000, bucketMs: 60_000, by: 'destination' };
      for (const name of ['eventForecastTenant', 'eventForecastAll'] as const) {
        const sql = READER_SQL[name];
        const plan = db
          .prepare<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
          .all(bind)
          .map((r) => r.detail);
        assert.ok(
          plan.some((d) => d.includes('USING COVERING INDEX events_forecast (tenant_id=? AND due_at>? AND due_at<?)')),
          `${name}: ${plan.join(' | ')}`,
        );
        assert.ok(!plan.some((d) => /^SCAN events\b/.test(d)), `${name} scans events: ${plan.join(' | ')}`);
      }
    } finally {
      await store.close();
    }
  });

  it('rejects a bad list cursor and an out-of-bounds limit', async () => {
    const dataDir = tempDir();
    const store = await openSqliteStore({ dataDir });
    try {
      await assert.rejects(store.eventList({ tenantId: 't', limit: 10, cursor: 'not-a-cursor!' }), /cursor/);
      await assert.rejects(store.eventList({ tenantId: 't', limit: 0 }), RangeError);
    } finally {
      await store.close();
    }
  });
});
