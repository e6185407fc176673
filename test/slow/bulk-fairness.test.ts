/**
 * Bulk jobs of different tenants progress side by side (the runner's round robin): while tenant
 * A's job shifts 30,000 events, tenant B's 1-event job, asked for after A's started, finishes
 * within a deadline and before A's. A real store on each backend (SQLite on its store thread, as
 * a node runs it; PostgreSQL), the runner as a node starts it, with its default batch and pause,
 * on the real clock.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { SimClock, SystemClock } from '../../src/core/clock.ts';
import { newSortableId } from '../../src/core/ids.ts';
import { BulkRunner } from '../../src/bulk/runner.ts';
import { openPostgresStore } from '../../src/store/postgres/postgres-store.ts';
import { openSqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { openSqliteThreadStore } from '../../src/store/sqlite/thread-store.ts';
import type { BulkJobRecord, NewEvent, Store } from '../../src/store/store.ts';
import { waitUntil } from '../support/node.ts';
import { dropTestSchema, TEST_PG_URL } from '../support/pg.ts';

const BIG_JOB_EVENTS = 30_000;
/** B's job must finish within this of being asked for ("about a second"; a shared 2-core machine). */
const SMALL_JOB_MS_MAX = 3_000;
const HOUR = 3_600_000;

type Opened = { store: Store; cleanup(): Promise<void> };

async function openSqlite(): Promise<Opened> {
  const dir = mkdtempSync(join(tmpdir(), 'belfry-bulk-fair-'));
  const store = (await openSqliteThreadStore({ dataDir: dir })) as unknown as Store;
  return {
    store,
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function openPostgres(): Promise<Opened> {
  const schema = `belfry_bulkfair_${randomBytes(4).toString('hex')}`;
  const store = await openPostgresStore({ url: TEST_PG_URL, schema, poolSize: 4 });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await dropTestSchema(schema);
    },
  };
}

function newEvent(tenantId: string, id: string, fireAt: number): NewEvent {
  return {
    tenantId,
    id,
    shard: 0,
    fireAt,
    destination: { name: 'orders' },
    payload: '{"n":1}',
    headers: {},
    group: null,
    retry: null,
    expireAt: null,
    tags: {},
    type: null,
    requestHash: '',
  };
}

function shiftJob(tenantId: string, now: number, id = `bulk_${newSortableId(now)}`): BulkJobRecord {
  return {
    tenantId,
    id,
    state: 'running',
    filter: { destination: 'orders' },
    action: { kind: 'shift', shiftMs: HOUR },
    cursor: null,
    matched: 0,
    done: 0,
    skipped: 0,
    errors: [],
    leaseOwner: null,
    leaseUntil: null,
    createdAt: now,
    updatedAt: now,
    finishedAt: null,
  };
}

for (const [backend, open] of [
  ['sqlite', openSqlite],
  ['postgres', openPostgres],
] as const) {
  describe(`bulk jobs of two tenants side by side (${backend})`, () => {
    let opened: Opened;
    let runner: BulkRunner | undefined;
    const clock = new SystemClock();
    before(async () => {
      opened = await open();
      const { store } = opened;
      const now = clock.now();
      for (const t of ['big', 'small']) await store.tenantCreate({ id: t, name: t, settings: {}, createdAt: now });
      for (let b = 0; b < BIG_JOB_EVENTS; b += 1_000) {
        const events = Array.from({ length: 1_000 }, (_, k) => newEvent('big', `e-${b + k}`, now + 24 * HOUR + b + k));
        await store.eventInsertMany({ events, now });
      }
      await store.eventInsertMany({ events: [newEvent('small', 'one', now + 24 * HOUR)], now });
    });
    after(async () => {
      await runner?.stop();
      await opened.cleanup();
    });

    it(`a 1-event job finishes within ${SMALL_JOB_MS_MAX} ms and before another tenant's ${BIG_JOB_EVENTS}-event job`, async () => {
      const { store } = opened;
      runner = new BulkRunner({
        store,
        clock,
        logger: pino({ level: 'silent' }),
        owner: 'fair-node',
        events: { changed: () => {} },
      });
      const big = shiftJob('big', clock.now());
      assert.equal(await store.bulkJobCreate({ job: big, runningMax: 2 }), true);
      runner.start();
      await waitUntil(
        'the big job under way',
        async () => ((await store.bulkJobGet({ tenantId: 'big', id: big.id }))?.done ?? 0) > 0,
        10_000,
      );

      const small = shiftJob('small', clock.now());
      const askedMs = performance.now();
      assert.equal(await store.bulkJobCreate({ job: small, runningMax: 2 }), true);
      let smallMs = 0;
      await waitUntil(
        'the small job to finish',
        async () => {
          const j = await store.bulkJobGet({ tenantId: 'small', id: small.id });
          if (j?.state !== 'succeeded') return false;
          smallMs = performance.now() - askedMs;
          return true;
        },
        120_000,
        10,
      );
      const bigNow = await store.bulkJobGet({ tenantId: 'big', id: big.id });
      console.log(
        `bulk fairness (${backend}): the 1-event job finished ${Math.round(smallMs)} ms after it was asked for; the ${BIG_JOB_EVENTS}-event job then: ${bigNow?.state}, ${bigNow?.done} done`,
      );
      const smallJob = await store.bulkJobGet({ tenantId: 'small', id: small.id });
      assert.deepEqual([smallJob?.matched, smallJob?.done], [1, 1]);
      assert.equal(bigNow?.state, 'running', 'the small job finished before the big one');
      assert.ok(bigNow!.done < BIG_JOB_EVENTS);
      assert.ok(smallMs <= SMALL_JOB_MS_MAX, `the small job took ${Math.round(smallMs)} ms`);
    });
  });
}

describe("the bulk runner's turns", () => {
  /**
   * Tenant a asks for two jobs, then b and c one each (a's are the oldest), each over 6 events
   * stepped 2 at a time (3 steps); runs turns until none is left. Returns the jobs stepped in each
   * turn and checks the bound on jobs held and that every job did its 6.
   */
  async function runTurns(jobsMax: number): Promise<string[][]> {
    const dir = mkdtempSync(join(tmpdir(), 'belfry-bulk-turns-'));
    const store = await openSqliteStore({ dataDir: dir });
    try {
      const clock = new SimClock();
      const now = clock.now();
      const jobs: BulkJobRecord[] = [];
      for (const [i, t] of (['a', 'a', 'b', 'c'] as const).entries()) {
        if (i === 0 || t !== 'a') await store.tenantCreate({ id: t, name: t, settings: {}, createdAt: now });
        const events = Array.from({ length: 6 }, (_, k) => ({
          ...newEvent(t, `${t}-${i}-${k}`, now + HOUR),
          destination: { name: `d${i}` },
        }));
        await store.eventInsertMany({ events, now });
        const job = { ...shiftJob(t, now + i, `bulk_${i}`), filter: { destination: `d${i}` } };
        assert.equal(await store.bulkJobCreate({ job, runningMax: 2 }), true);
        jobs.push(job);
      }
      let turn: string[] = [];
      const runner = new BulkRunner(
        {
          store,
          clock,
          logger: pino({ level: 'silent' }),
          owner: 'turns',
          events: { changed: () => {} },
          onStep: (j) => turn.push(j.id),
        },
        { batchSize: 2, pauseFactor: 0, jobsMax },
      );
      const turns: string[][] = [];
      while (await runner.turn()) {
        turns.push(turn);
        turn = [];
        assert.ok(runner.heldJobs().length <= jobsMax, 'at most jobsMax held');
        assert.ok(turns.length < 50, 'the jobs end');
      }
      for (const j of jobs)
        assert.deepEqual((await store.bulkJobGet({ tenantId: j.tenantId, id: j.id }))?.done, 6, j.id);
      return turns;
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('with room for two, serves a tenant not running yet before a second job of one that is; the others wait for room', async () => {
    // b's job comes in before a's second (a runs one already), and c's waits; once there is room
    // for two again, the oldest first.
    assert.deepEqual(await runTurns(2), [
      ['bulk_0', 'bulk_2'],
      ['bulk_0', 'bulk_2'],
      ['bulk_0', 'bulk_2'],
      ['bulk_1', 'bulk_3'],
      ['bulk_1', 'bulk_3'],
      ['bulk_1', 'bulk_3'],
    ]);
  });

  it("with room for all, steps one job of each tenant per turn: a tenant's two jobs take turns", async () => {
    assert.deepEqual(await runTurns(4), [
      ['bulk_0', 'bulk_2', 'bulk_3'],
      ['bulk_1', 'bulk_2', 'bulk_3'],
      ['bulk_0', 'bulk_2', 'bulk_3'],
      ['bulk_1'],
      ['bulk_0'],
      ['bulk_1'],
    ]);
  });
});
