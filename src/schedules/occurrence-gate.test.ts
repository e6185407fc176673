/**
 * The occurrence gate on a real SQLite store and a SimClock: occurrences made ahead that reach
 * their first fire late follow `missed` then (across a jump of the clock, as a stopped node or a
 * moving shard would make them late), retries and ordinary events are left alone, the tenant's
 * rate refuses what it must, and the counts (fired, missed, lastMissed) reach the schedule.
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
import { dueRefOf, type DueRef } from '../store/store.ts';
import { Materialiser } from './materialiser.ts';
import { OccurrenceGate } from './occurrence-gate.ts';
import { parseOccurrenceId, timingOf } from './occurrence.ts';
import { MISSED_AFTER_MS_DEFAULT } from '../core/missed.ts';

const logger = pino({ level: 'silent' });
const SEC = 1_000;
const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);
const TENANT = 't1';
let store: SqliteStore;
let dataDir: string;

beforeEach(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'belfry-gate-'));
  store = await openSqliteStore({ dataDir });
  await store.tenantCreate({ id: TENANT, name: TENANT, settings: {}, createdAt: 0 });
});
afterEach(async () => {
  await store.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function createSchedule(id: string, missed: MissedPolicy, catchUpMax = 3): Promise<void> {
  const spec = {
    cron: null,
    everyMs: SEC,
    timezone: 'UTC',
    startAt: T0,
    endAt: null,
    missed,
    catchUpMax,
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
  };
  const s: ScheduleRecord = {
    tenantId: TENANT,
    id,
    shard: 0,
    version: 1,
    spec,
    paused: false,
    nextAt: nextOccurrence(timingOf(spec), T0 - 1),
    firedCount: 0,
    missedCount: 0,
    lastOccurrenceAt: null,
    lastMissed: null,
    createdAt: T0,
    updatedAt: T0,
  };
  assert.equal((await store.scheduleCreate({ schedule: s, perTenantMax: 10 })).kind, 'created');
}

/** Makes T0 .. T0+10s of `id` (the horizon) as the materialiser does. */
async function makeAhead(clock: SimClock): Promise<void> {
  await new Materialiser(
    { store, clock, logger, shardCount: 16, shards: () => null, events: { changed: () => {} } },
    { horizonMs: 10 * SEC, refillMs: 0 },
  ).runOnce();
}

async function dueRefs(scheduleId: string): Promise<DueRef[]> {
  const events = await store.scheduleOccurrenceList({ tenantId: TENANT, scheduleId, limit: 100 });
  return events
    .filter((e) => e.state === 'scheduled')
    .map(dueRefOf)
    .sort((a, b) => a.dueAt - b.dueAt);
}

function gate(
  clock: SimClock,
  changed: EventRecord[] = [],
  admitFire?: (tenantId: string) => string | null,
): OccurrenceGate {
  return new OccurrenceGate({ store, clock, logger, events: { changed: (e) => changed.push(...e) }, admitFire });
}

const secOf = (refs: DueRef[]) => refs.map((r) => (r.dueAt - T0) / SEC);

describe('occurrence gate', () => {
  it('parses occurrence ids and nothing else', () => {
    assert.deepEqual(parseOccurrenceId('daily@2026-11-23T08:00:00.000Z'), {
      scheduleId: 'daily',
      at: Date.UTC(2026, 10, 23, 8),
    });
    assert.deepEqual(parseOccurrenceId('a@b@2026-11-23T08:00:00.000Z'), {
      scheduleId: 'a@b',
      at: Date.UTC(2026, 10, 23, 8),
    });
    for (const id of [
      'order-1',
      '@2026-11-23T08:00:00.000Z',
      'x@2026-11-23T08:00:00Z',
      'x@2026-13-23T08:00:00.000Z',
      'x@not-a-time-at-all-xxxxxx',
    ]) {
      assert.equal(parseOccurrenceId(id), null, id);
    }
  });

  it('lets on-time occurrences through without a store read', async () => {
    const clock = new SimClock(T0);
    await createSchedule('s', 'skip');
    await makeAhead(clock);
    const refs = await dueRefs('s');
    await clock.advance(500);
    const first = refs.slice(0, 1);
    assert.equal(await gate(clock).beforeClaim(first, clock.now()), first, 'the same array: nothing judged');
  });

  for (const [missed, fired] of [
    ['skip', [6]],
    ['fire-once', [5, 6]],
    ['fire-all', [3, 4, 5, 6]],
  ] as const) {
    it(`${missed}: after the clock jumps 6.5 s past occurrences made ahead, fires ${JSON.stringify(fired)} of T0..T0+6s and cancels the rest with the reason`, async () => {
      const clock = new SimClock(T0);
      await createSchedule('s', missed);
      await makeAhead(clock);
      clock.jump(6_500); // a node paused (or stopped) for 6.5 s: T0 .. T0+5s are late (more than 1 s)
      const refs = (await dueRefs('s')).filter((r) => r.dueAt <= clock.now());
      assert.deepEqual(secOf(refs), [0, 1, 2, 3, 4, 5, 6]);
      const changed: EventRecord[] = [];
      const g = gate(clock, changed);
      const kept = await g.beforeClaim(refs, clock.now());
      assert.deepEqual(secOf(kept), [...fired]);
      assert.equal(changed.length, 7 - fired.length);
      for (const e of changed) {
        assert.equal(e.state, 'canceled');
        assert.match(
          e.lastError ?? '',
          /^missed: \d+ ms late, more than missedAfter \(1000 ms\); the schedule's missed is /,
        );
        const trace = await store.transitionList({ tenantId: TENANT, eventId: e.id, limit: 10 });
        assert.match(
          String((trace.at(-1)?.detail as { reason?: string })?.reason),
          /^missed: /,
          'the reason is in the trace',
        );
      }
      await g.flush();
      const s = await store.scheduleGet({ tenantId: TENANT, id: 's' });
      assert.equal(s?.missedCount, 7 - fired.length);
      assert.match(s?.lastMissed?.reason ?? '', /^missed: /);
      assert.equal(s?.lastMissed?.count, 7 - fired.length);
    });
  }

  it('judges first fires only: a retry of a late occurrence and an ordinary event with such an id go on', async () => {
    const clock = new SimClock(T0);
    await createSchedule('s', 'skip');
    await makeAhead(clock);
    clock.jump(5_000);
    const [first] = await dueRefs('s');
    const retry: DueRef = { ...first, dueAt: first.dueAt + 2 * SEC };
    const stranger: DueRef = { ...first, id: occurrenceId('no-such-schedule', first.dueAt) };
    const refs = [retry, stranger];
    assert.deepEqual(await gate(clock).beforeClaim(refs, clock.now()), refs);
  });

  it("counts a claimed first attempt as fired, and cancels what the tenant's rate refuses", async () => {
    const clock = new SimClock(T0);
    await createSchedule('s', 'skip');
    await makeAhead(clock);
    await clock.advance(2_100);
    // T0+2s is due; T0+3s and T0+4s come along early (as a claim may take what falls due in a few ms).
    const refs = (await dueRefs('s')).filter((r) => r.dueAt >= T0 + 2 * SEC && r.dueAt <= T0 + 4 * SEC);
    let tokens = 2;
    const changed: EventRecord[] = [];
    const g = gate(clock, changed, () =>
      tokens-- > 0 ? null : "refused by the tenant's scheduleRequestsPerSecond (2 per second)",
    );
    const kept = await g.beforeClaim(refs, clock.now());
    assert.deepEqual(secOf(kept), [2, 3], 'T0+4s refused by the rate');
    assert.equal(changed[0]?.lastError, "refused by the tenant's scheduleRequestsPerSecond (2 per second)");
    const claimed = await store.eventClaim({
      refs: kept,
      now: clock.now(),
      owner: 'n',
      leaseUntil: clock.now() + 60 * SEC,
    });
    g.afterClaim(claimed);
    await g.flush();
    const s = await store.scheduleGet({ tenantId: TENANT, id: 's' });
    assert.deepEqual([s?.firedCount, s?.missedCount], [2, 1]);
  });

  it('counts once a write that committed but whose answer was lost: it is repeated under its id before anything new', async () => {
    const clock = new SimClock(T0);
    await createSchedule('s', 'skip');
    await makeAhead(clock);
    await clock.advance(1_100);
    // The connection drops after the first counts write committed: the gate hears an error.
    let lose = 1;
    const writes: string[] = [];
    const lossy = Object.create(store) as SqliteStore;
    lossy.scheduleCountsAdd = async (p) => {
      writes.push(p.writeId);
      const r = await store.scheduleCountsAdd(p);
      if (lose-- > 0) throw Object.assign(new Error('connection lost after commit'), { code: '08006' });
      return r;
    };
    const g = new OccurrenceGate({ store: lossy, clock, logger, events: { changed: () => {} } });
    const claim = async (sec: number) => {
      const refs = (await dueRefs('s')).filter((r) => r.dueAt === T0 + sec * SEC);
      g.afterClaim(await store.eventClaim({ refs, now: clock.now(), owner: 'n', leaseUntil: clock.now() + 60 * SEC }));
    };
    await claim(0);
    await claim(1);
    await g.flush();
    await clock.advance(1_000);
    await claim(2);
    await g.flush();
    assert.equal(writes.length, 3, 'the lost write again, then the new counts');
    assert.equal(writes[1], writes[0], 'repeated under its own id');
    assert.notEqual(writes[2], writes[0]);
    const s = await store.scheduleGet({ tenantId: TENANT, id: 's' });
    assert.deepEqual([s?.firedCount, s?.missedCount], [3, 0], 'each fire counted once');
  });
});
