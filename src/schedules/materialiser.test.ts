/**
 * The materialiser on a real SQLite store and a SimClock, driven by runOnce: the horizon, exactly
 * once under a race of two materialisers and a restart, the clock going back an hour, and each
 * missed policy after an outage. Nothing sleeps.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { SimClock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import { nextOccurrence } from '../core/occurrences.ts';
import { occurrenceId, type MissedPolicy, type ScheduleRecord } from '../store/schedules.ts';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/sqlite-store.ts';
import { Materialiser } from './materialiser.ts';
import { timingOf } from './occurrence.ts';
import { dropTestSchema, TEST_PG_URL } from '../../test/support/pg.ts';
import { MISSED_AFTER_MS_DEFAULT } from '../core/missed.ts';

const logger = pino({ level: 'silent' });
const SEC = 1_000;
const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);
const TENANT = 't1';
let store: SqliteStore;
let dataDir: string;

beforeEach(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'belfry-materialiser-'));
  store = await openSqliteStore({ dataDir });
  await store.tenantCreate({ id: TENANT, name: TENANT, settings: {}, createdAt: 0 });
});
afterEach(async () => {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function createSchedule(
  id: string,
  o: {
    everyMs?: number;
    cron?: string;
    timezone?: string;
    startAt?: number;
    missed?: MissedPolicy;
    catchUpMax?: number;
  } = {},
): Promise<ScheduleRecord> {
  const spec = {
    cron: o.cron ?? null,
    everyMs: o.cron ? null : (o.everyMs ?? SEC),
    timezone: o.timezone ?? 'UTC',
    startAt: o.startAt ?? T0,
    endAt: null,
    missed: o.missed ?? 'skip',
    catchUpMax: o.catchUpMax ?? 100,
    missedAfterMs: MISSED_AFTER_MS_DEFAULT,
    template: {
      destination: { url: 'https://example.com/hook' },
      payload: '{"n":1}',
      headers: {},
      group: null,
      retry: null,
      expireAfterMs: null,
      tags: {},
      type: null,
    },
    input: {},
  };
  const s: ScheduleRecord = {
    tenantId: TENANT,
    id,
    shard: 0,
    version: 1,
    spec,
    paused: false,
    nextAt: nextOccurrence(timingOf(spec), spec.startAt - 1),
    firedCount: 0,
    missedCount: 0,
    lastOccurrenceAt: null,
    lastMissed: null,
    createdAt: T0,
    updatedAt: T0,
  };
  assert.equal((await store.scheduleCreate({ schedule: s, perTenantMax: 10 })).kind, 'created');
  return s;
}

function materialiser(clock: SimClock, created: EventRecord[] = [], horizonMs = 10 * SEC): Materialiser {
  return new Materialiser(
    {
      store,
      clock,
      logger,
      shardCount: 16,
      shards: () => null,
      events: { changed: (events) => created.push(...events) },
    },
    // No refill: each pass makes exactly what its horizon reaches, so the counts below are exact.
    { horizonMs, refillMs: 0 },
  );
}

async function occurrences(scheduleId: string): Promise<string[]> {
  const events = await store.scheduleOccurrenceList({ tenantId: TENANT, scheduleId, limit: 1000 });
  return events.map((e) => e.id).reverse();
}

const ids = (scheduleId: string, fromMs: number, n: number, stepMs = SEC) =>
  Array.from({ length: n }, (_, k) => occurrenceId(scheduleId, fromMs + k * stepMs));

describe('materialiser', () => {
  it('makes the occurrences within the horizon once, and the next ones as time moves', async () => {
    const clock = new SimClock(T0);
    await createSchedule('tick');
    const created: EventRecord[] = [];
    const m = materialiser(clock, created);
    assert.equal((await m.runOnce()).made, 11, 'T0 .. T0+10s');
    assert.equal((await m.runOnce()).made, 0);
    await clock.advance(5 * SEC);
    assert.equal((await m.runOnce()).made, 5);
    assert.deepEqual(await occurrences('tick'), ids('tick', T0, 16));
    assert.equal(created.length, 16);
    const e = created[0];
    assert.deepEqual([e.id, e.fireAt, e.state, e.payload], [occurrenceId('tick', T0), T0, 'scheduled', '{"n":1}']);
    const s = await store.scheduleGet({ tenantId: TENANT, id: 'tick' });
    assert.deepEqual(
      [s?.firedCount, s?.missedCount, s?.nextAt, s?.lastOccurrenceAt],
      [0, 0, T0 + 16 * SEC, T0 + 15 * SEC],
      'fired counts deliveries started, not occurrences made',
    );
  });

  it('advances a schedule once per refill, not once per occurrence', async () => {
    const clock = new SimClock(T0);
    await createSchedule('refill');
    const m = new Materialiser(
      { store, clock, logger, shardCount: 16, shards: () => null, events: { changed: () => {} } },
      { horizonMs: 10 * SEC, refillMs: 10 * SEC },
    );
    assert.equal((await m.runOnce()).made, 21, 'T0 .. T0+20s: the horizon and the refill');
    let advances = 0;
    for (let s = 1; s <= 11; s++) {
      await clock.advance(SEC);
      advances += (await m.runOnce()).schedules;
    }
    assert.equal(advances, 1, 'touched again only when its cursor came within the horizon (at T0+11s)');
    assert.deepEqual(await occurrences('refill'), ids('refill', T0, 32), 'T0 .. T0+31s, each once');
  });

  it('two materialisers racing (a second node) and a restart make each occurrence once', async () => {
    const clock = new SimClock(T0);
    await createSchedule('race');
    const a = materialiser(clock);
    const b = materialiser(clock);
    for (let i = 0; i < 20; i++) {
      const [ra, rb] = await Promise.all([a.runOnce(), b.runOnce()]);
      assert.ok(ra.made + rb.made <= 11);
      await clock.advance(SEC);
    }
    // A restart: a new materialiser from the stored cursor.
    await materialiser(clock).runOnce();
    assert.deepEqual(await occurrences('race'), ids('race', T0, 31), 'T0 .. T0+30s, each once');
  });

  it('the wall clock going back an hour makes nothing twice; going on makes the rest once', async () => {
    const clock = new SimClock(T0);
    await createSchedule('rev');
    const m = materialiser(clock);
    for (let i = 0; i < 20; i++) {
      await clock.advance(SEC);
      await m.runOnce();
    }
    const before = await occurrences('rev');
    assert.deepEqual(before, ids('rev', T0, 31));
    clock.jump(-3_600 * SEC);
    for (let i = 0; i < 5; i++) {
      assert.deepEqual(await m.runOnce(), { schedules: 0, made: 0, missed: 0, lost: 0, catchUpLeft: false });
      await clock.advance(SEC);
    }
    assert.deepEqual(await occurrences('rev'), before, 'nothing new while the clock is behind the cursor');
    clock.jump(3_600 * SEC); // back to T0+25s: the horizon reaches T0+35s
    await m.runOnce();
    assert.deepEqual(await occurrences('rev'), ids('rev', T0, 36), 'then on from the cursor, once each');
  });

  describe('missed occurrences after an outage of 60 s', () => {
    async function outage(missed: MissedPolicy, catchUpMax = 100) {
      const clock = new SimClock(T0);
      await createSchedule('s', { missed, catchUpMax });
      const m = materialiser(clock);
      await m.runOnce(); // T0 .. T0+10s made
      clock.jump(70 * SEC); // down from T0+10s to T0+70s
      const pass = await m.runOnce();
      const all = await occurrences('s');
      const s = await store.scheduleGet({ tenantId: TENANT, id: 's' });
      return { pass, all, s: s! };
    }
    // Made before: T0..T0+10s (11). Missed window: T0+11s .. T0+68s (occurrences before now - 1s = T0+69s): 58.
    // On time again: T0+69s .. T0+80s (12).
    it('skip: none of the missed occurrences is made; all are counted', async () => {
      const { pass, all, s } = await outage('skip');
      assert.equal(pass.missed, 58);
      assert.deepEqual(all, [...ids('s', T0, 11), ...ids('s', T0 + 69 * SEC, 12)]);
      assert.equal(s.missedCount, 58);
    });
    it('fire-once: only the latest missed occurrence is made', async () => {
      const { pass, all, s } = await outage('fire-once');
      assert.equal(pass.missed, 57);
      assert.deepEqual(all, [...ids('s', T0, 11), occurrenceId('s', T0 + 68 * SEC), ...ids('s', T0 + 69 * SEC, 12)]);
      assert.equal(s.missedCount, 57);
    });
    it('fire-all: the latest catchUpMax are made, the rest counted', async () => {
      const { pass, all, s } = await outage('fire-all', 5);
      assert.equal(pass.missed, 53);
      assert.deepEqual(all, [...ids('s', T0, 11), ...ids('s', T0 + 64 * SEC, 5), ...ids('s', T0 + 69 * SEC, 12)]);
      assert.equal(s.missedCount, 53);
    });
  });

  it('a cron in Europe/Paris over the spring-forward night makes the skipped 02:30 once, at 03:00 CEST', async () => {
    const start = Date.parse('2026-03-28T00:00:00Z');
    const clock = new SimClock(start);
    await createSchedule('paris', { cron: '30 2 * * *', timezone: 'Europe/Paris', startAt: start });
    const m = materialiser(clock, [], 2 * 3_600 * SEC);
    for (let h = 0; h < 72; h++) {
      // to 2026-03-31T00:00Z, the horizon 2 h ahead
      await m.runOnce();
      await clock.advance(3_600 * SEC);
    }
    assert.deepEqual(await occurrences('paris'), [
      occurrenceId('paris', Date.parse('2026-03-28T01:30:00Z')),
      occurrenceId('paris', Date.parse('2026-03-29T01:00:00Z')),
      occurrenceId('paris', Date.parse('2026-03-30T00:30:00Z')),
      occurrenceId('paris', Date.parse('2026-03-31T00:30:00Z')),
    ]);
  });
});

describe('materialiser on PostgreSQL', () => {
  it('three materialisers racing on one store (three nodes during a shard move) make each occurrence of each schedule once', async () => {
    const { openPostgresStore } = await import('../store/postgres/postgres-store.ts');
    const url = TEST_PG_URL;
    const schema = `belfry_mat_${Math.random().toString(36).slice(2, 10)}`;
    const pgStore = await openPostgresStore({ url, schema, poolSize: 6 });
    try {
      await pgStore.tenantCreate({ id: TENANT, name: TENANT, settings: {}, createdAt: 0 });
      const spec = (everyMs: number) => ({
        cron: null,
        everyMs,
        timezone: 'UTC',
        startAt: T0,
        endAt: null,
        missed: 'fire-all' as const,
        catchUpMax: 100,
        missedAfterMs: MISSED_AFTER_MS_DEFAULT,
        template: {
          destination: { url: 'https://example.com/hook' },
          payload: '{}',
          headers: {},
          group: null,
          retry: null,
          expireAfterMs: null,
          tags: {},
          type: null,
        },
        input: {},
      });
      const scheduleIds = ['p1', 'p2', 'p3', 'p4'];
      for (const [k, id] of scheduleIds.entries()) {
        const s = spec((k + 1) * SEC);
        const r = await pgStore.scheduleCreate({
          schedule: {
            tenantId: TENANT,
            id,
            shard: k,
            version: 1,
            spec: s,
            paused: false,
            nextAt: T0,
            firedCount: 0,
            missedCount: 0,
            lastOccurrenceAt: null,
            lastMissed: null,
            createdAt: T0,
            updatedAt: T0,
          },
          perTenantMax: 10,
        });
        assert.equal(r.kind, 'created');
      }
      const clock = new SimClock(T0);
      const made: string[] = [];
      const nodes = [0, 1, 2].map(
        () =>
          new Materialiser(
            {
              store: pgStore,
              clock,
              logger,
              shardCount: 16,
              shards: () => null,
              events: { changed: (events) => made.push(...events.map((e) => e.id)) },
            },
            { horizonMs: 10 * SEC, refillMs: 0 },
          ),
      );
      let lost = 0;
      for (let i = 0; i < 20; i++) {
        const passes = await Promise.all(nodes.map((n) => n.runOnce()));
        lost += passes.reduce((a, p) => a + p.lost, 0);
        await clock.advance(SEC);
      }
      assert.equal(new Set(made).size, made.length, 'no occurrence created twice');
      for (const [k, id] of scheduleIds.entries()) {
        const step = (k + 1) * SEC;
        const expected = Array.from({ length: Math.floor((29 * SEC) / step) + 1 }, (_, j) =>
          occurrenceId(id, T0 + j * step),
        );
        const stored = (await pgStore.scheduleOccurrenceList({ tenantId: TENANT, scheduleId: id, limit: 1000 }))
          .map((e) => e.id)
          .reverse();
        assert.deepEqual(stored, expected, `${id}: every occurrence to T0+29s, once`);
      }
      console.log(
        `three racing materialisers on PostgreSQL: ${made.length} occurrences made once each, ${lost} advances lost the swap`,
      );
    } finally {
      await pgStore.close();
      await dropTestSchema(schema);
    }
  });
});
