/** Conformance: recurring schedules: create with a per-tenant bound, edit, delete, the due list, the cursor's compare-and-swap with its occurrences, and the occurrence list. */
import { MISSED_AFTER_MS_DEFAULT } from '../../core/missed.ts';
import assert from 'node:assert/strict';
import { it } from 'node:test';
import {
  OCCURRENCE_CANCEL_REASONS,
  occurrenceId,
  SCHEDULE_COUNT_WRITE_KEEP_MS,
  type ScheduleRecord,
} from '../schedules.ts';
import type { Store } from '../store.ts';
import { mustGet, newEvent, newTenant, SEC, T0, twoTenants, uniqueShard, type SuiteContext } from './fixtures.ts';

function newSchedule(tenantId: string, id: string, o: Partial<ScheduleRecord> = {}): ScheduleRecord {
  return {
    tenantId,
    id,
    shard: 0,
    version: 1,
    spec: {
      cron: null,
      everyMs: SEC,
      timezone: 'UTC',
      startAt: T0,
      endAt: null,
      missed: 'fire-once',
      catchUpMax: 100,
      missedAfterMs: MISSED_AFTER_MS_DEFAULT,
      template: {
        destination: { name: 'orders' },
        payload: '{"n":1}',
        headers: {},
        group: null,
        retry: null,
        expireAfterMs: null,
        tags: {},
        type: null,
      },
      input: { every: '1s', destination: 'orders' },
    },
    paused: false,
    nextAt: T0,
    firedCount: 0,
    missedCount: 0,
    lastOccurrenceAt: null,
    lastMissed: null,
    createdAt: T0,
    updatedAt: T0,
    ...o,
  };
}

async function mustCreate(store: Store, s: ScheduleRecord): Promise<ScheduleRecord> {
  const r = await store.scheduleCreate({ schedule: s, perTenantMax: 100 });
  assert.equal(r.kind, 'created');
  return s;
}

export function scheduleCases(ctx: SuiteContext): void {
  it('creates a schedule, reads it back, refuses the same id and a tenant over its bound', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const s = newSchedule(a, 'daily');
    assert.deepEqual(await store.scheduleCreate({ schedule: s, perTenantMax: 2 }), { kind: 'created', schedule: s });
    assert.deepEqual(await store.scheduleGet({ tenantId: a, id: 'daily' }), s);
    assert.equal(await store.scheduleGet({ tenantId: b, id: 'daily' }), null, 'another tenant sees nothing');
    const again = await store.scheduleCreate({ schedule: { ...s, version: 9 }, perTenantMax: 2 });
    assert.deepEqual(again, { kind: 'exists', schedule: s });
    await mustCreate(store, newSchedule(a, 'hourly'));
    assert.deepEqual(await store.scheduleCreate({ schedule: newSchedule(a, 'third'), perTenantMax: 2 }), {
      kind: 'limit',
    });
    assert.equal(await store.scheduleGet({ tenantId: a, id: 'third' }), null);
    assert.equal(
      (await store.scheduleCreate({ schedule: newSchedule(b, 'daily'), perTenantMax: 2 })).kind,
      'created',
      'the bound is per tenant',
    );
    assert.deepEqual(
      (await store.scheduleList({ tenantId: a, limit: 10 })).map((x) => x.id),
      ['daily', 'hourly'],
    );
    assert.deepEqual(
      (await store.scheduleList({ tenantId: a, afterId: 'daily', limit: 10 })).map((x) => x.id),
      ['hourly'],
    );
  });

  it('updates (version + 1, If-Match) and deletes', async () => {
    const store = ctx.store();
    const t = await newTenant(store);
    const s = await mustCreate(store, newSchedule(t, 's'));
    const paused = await store.scheduleUpdate({
      tenantId: t,
      id: 's',
      expectedVersion: 1,
      paused: true,
      now: T0 + SEC,
    });
    assert.equal(paused.kind, 'ok');
    assert.deepEqual(paused.kind === 'ok' && paused.schedule, { ...s, version: 2, paused: true, updatedAt: T0 + SEC });
    assert.deepEqual(await store.scheduleGet({ tenantId: t, id: 's' }), {
      ...s,
      version: 2,
      paused: true,
      updatedAt: T0 + SEC,
    });
    const stale = await store.scheduleUpdate({
      tenantId: t,
      id: 's',
      expectedVersion: 1,
      paused: false,
      now: T0 + 2 * SEC,
    });
    assert.equal(stale.kind, 'version_mismatch');
    const spec = { ...s.spec, everyMs: 5 * SEC };
    const edited = await store.scheduleUpdate({
      tenantId: t,
      id: 's',
      spec,
      paused: false,
      nextAt: T0 + 5 * SEC,
      now: T0 + 3 * SEC,
    });
    assert.equal(edited.kind === 'ok' && edited.schedule.version, 3);
    const got = await store.scheduleGet({ tenantId: t, id: 's' });
    assert.deepEqual([got?.spec.everyMs, got?.paused, got?.nextAt], [5 * SEC, false, T0 + 5 * SEC]);
    assert.equal((await store.scheduleUpdate({ tenantId: t, id: 'nope', paused: true, now: T0 })).kind, 'not_found');
    assert.equal((await store.scheduleDelete({ tenantId: t, id: 's', expectedVersion: 2 })).kind, 'version_mismatch');
    assert.equal((await store.scheduleDelete({ tenantId: t, id: 's' })).kind, 'ok');
    assert.equal(await store.scheduleGet({ tenantId: t, id: 's' }), null);
    assert.equal((await store.scheduleDelete({ tenantId: t, id: 's' })).kind, 'not_found');
  });

  it('lists due schedules of the given shards, earliest cursor first, leaving out paused and finished ones', async () => {
    const store = ctx.store();
    const t = await newTenant(store);
    const shard = uniqueShard();
    await mustCreate(store, newSchedule(t, 'late', { shard, nextAt: T0 + 5 * SEC }));
    await mustCreate(store, newSchedule(t, 'early', { shard, nextAt: T0 + SEC }));
    await mustCreate(store, newSchedule(t, 'far', { shard, nextAt: T0 + 60 * SEC }));
    await mustCreate(store, newSchedule(t, 'paused', { shard, nextAt: T0, paused: true }));
    await mustCreate(store, newSchedule(t, 'done', { shard, nextAt: null }));
    await mustCreate(store, newSchedule(t, 'elsewhere', { shard: uniqueShard(), nextAt: T0 }));
    const due = await store.scheduleListDue({ shards: [shard], untilMs: T0 + 10 * SEC, limit: 100 });
    assert.deepEqual(
      due.map((s) => s.id),
      ['early', 'late'],
    );
    const first = await store.scheduleListDue({ shards: [shard], untilMs: T0 + 10 * SEC, limit: 1 });
    assert.ok(first.length <= 1);
  });

  it('advances the cursor and inserts the occurrences in one step, only from the expected (version, cursor)', async () => {
    const store = ctx.store();
    const t = await newTenant(store);
    const s = await mustCreate(store, newSchedule(t, 'tick'));
    const ev = (at: number) => newEvent(t, occurrenceId('tick', at), { fireAt: at, requestHash: `h-${at}` });
    const params = {
      tenantId: t,
      id: 'tick',
      version: 1,
      fromNextAt: T0,
      nextAt: T0 + 2 * SEC,
      firedAdd: 2,
      missedAdd: 0,
      lastOccurrenceAt: T0 + SEC,
      events: [ev(T0), ev(T0 + SEC)],
      now: T0,
    };
    const done = await store.scheduleAdvance(params);
    assert.equal(done.applied, true);
    assert.deepEqual(done.applied && done.results.map((r) => r.kind), ['created', 'created']);
    // The same advance again (a second node, a restart that read the old row): the swap fails, nothing is written.
    assert.deepEqual(await store.scheduleAdvance({ ...params, events: [ev(T0), ev(T0 + SEC), ev(T0 + 9 * SEC)] }), {
      applied: false,
    });
    assert.equal(
      await store.eventGet({ tenantId: t, id: occurrenceId('tick', T0 + 9 * SEC) }),
      null,
      'a failed swap inserts nothing',
    );
    const after = await store.scheduleGet({ tenantId: t, id: 'tick' });
    assert.deepEqual(
      [after?.nextAt, after?.firedCount, after?.lastOccurrenceAt, after?.version],
      [T0 + 2 * SEC, 2, T0 + SEC, s.version],
    );
    // Missed counts add up; an occurrence already stored with the same body is `existing`.
    const next = await store.scheduleAdvance({
      ...params,
      fromNextAt: T0 + 2 * SEC,
      nextAt: T0 + 5 * SEC,
      firedAdd: 1,
      missedAdd: 2,
      lastOccurrenceAt: T0 + 4 * SEC,
      events: [ev(T0 + SEC), ev(T0 + 4 * SEC)],
    });
    assert.deepEqual(next.applied && next.results.map((r) => r.kind), ['existing', 'created']);
    const counted = await store.scheduleGet({ tenantId: t, id: 'tick' });
    assert.deepEqual([counted?.firedCount, counted?.missedCount, counted?.nextAt], [3, 2, T0 + 5 * SEC]);
    // An edit (version + 1) or a pause makes an advance read before it fail.
    await store.scheduleUpdate({ tenantId: t, id: 'tick', paused: true, now: T0 });
    assert.deepEqual(
      await store.scheduleAdvance({ ...params, version: 2, fromNextAt: T0 + 5 * SEC, events: [] }),
      { applied: false },
      'paused',
    );
    assert.deepEqual(
      await store.scheduleAdvance({ ...params, version: 1, fromNextAt: T0 + 5 * SEC, events: [] }),
      { applied: false },
      'old version',
    );
  });

  it('lists only schedules from fromMs on as due, and catch-ups a tenant at a time, by (tenant, cursor)', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const shard = uniqueShard();
    await mustCreate(store, newSchedule(a, 'a-behind', { shard, nextAt: T0 - 60 * SEC }));
    await mustCreate(store, newSchedule(a, 'a-far-behind', { shard, nextAt: T0 - 3_600 * SEC }));
    await mustCreate(store, newSchedule(a, 'a-on-time', { shard, nextAt: T0 + SEC }));
    await mustCreate(store, newSchedule(b, 'b-behind', { shard, nextAt: T0 - 5 * SEC }));
    await mustCreate(store, newSchedule(b, 'b-paused', { shard, nextAt: T0 - 5 * SEC, paused: true }));
    const onTime = await store.scheduleListDue({
      shards: [shard],
      fromMs: T0 - SEC,
      untilMs: T0 + 10 * SEC,
      limit: 100,
    });
    assert.deepEqual(
      onTime.map((s) => s.id),
      ['a-on-time'],
    );
    const first = await store.scheduleListCatchUp({
      shards: [shard],
      beforeMs: T0 - SEC,
      afterTenantId: '',
      limit: 100,
    });
    const [lo, hi]: ('a' | 'b')[] = a < b ? ['a', 'b'] : ['b', 'a'];
    const byTenant = { a: ['a-far-behind', 'a-behind'], b: ['b-behind'] };
    assert.deepEqual(
      first.map((s) => s.id),
      [...byTenant[lo], ...byTenant[hi]],
      'by tenant, then cursor; paused and on-time left out',
    );
    const next = await store.scheduleListCatchUp({
      shards: [shard],
      beforeMs: T0 - SEC,
      afterTenantId: lo === 'a' ? a : b,
      limit: 100,
    });
    assert.deepEqual(
      next.map((s) => s.id),
      byTenant[hi],
      'the tenants after the one given',
    );
    assert.deepEqual(
      await store.scheduleListCatchUp({ shards: [uniqueShard()], beforeMs: T0, afterTenantId: '', limit: 100 }),
      [],
    );
  });

  it('adds to schedules’ counts, leaving out schedules that are gone', async () => {
    const store = ctx.store();
    const t = await newTenant(store);
    await mustCreate(store, newSchedule(t, 'counted'));
    const w = `${t}:w`;
    await store.scheduleCountsAdd({
      writeId: `${w}1`,
      now: T0,
      deltas: [
        { tenantId: t, id: 'counted', firedAdd: 3, missedAdd: 1 },
        { tenantId: t, id: 'gone', firedAdd: 1, missedAdd: 1 },
      ],
    });
    await store.scheduleCountsAdd({
      writeId: `${w}2`,
      now: T0,
      deltas: [{ tenantId: t, id: 'counted', firedAdd: 1, missedAdd: 0 }],
    });
    const s = await store.scheduleGet({ tenantId: t, id: 'counted' });
    assert.deepEqual([s?.firedCount, s?.missedCount, s?.version], [4, 1, 1], 'counts are not edits: the version stays');
  });

  it('adds a counts write once, however often it is repeated (its answer lost), while its id is kept', async () => {
    const store = ctx.store();
    const t = await newTenant(store);
    await mustCreate(store, newSchedule(t, 'once'));
    const write = (writeId: string, now: number) =>
      store.scheduleCountsAdd({ writeId, now, deltas: [{ tenantId: t, id: 'once', firedAdd: 2, missedAdd: 1 }] });
    assert.deepEqual(await write(`${t}:a`, T0), { applied: true });
    assert.deepEqual(await write(`${t}:a`, T0 + SEC), { applied: false }, 'the same write again adds nothing');
    assert.deepEqual(await write(`${t}:b`, T0 + SEC), { applied: true }, 'another write of the same writer adds');
    const s = await store.scheduleGet({ tenantId: t, id: 'once' });
    assert.deepEqual([s?.firedCount, s?.missedCount], [4, 2]);
    // Past the time ids are kept, a write forgets the old ones (a write repeated that late counts again).
    const later = T0 + SCHEDULE_COUNT_WRITE_KEEP_MS + 2 * SEC;
    assert.deepEqual(await write(`${t}:c`, later), { applied: true });
    assert.deepEqual(await write(`${t}:a`, later), { applied: true }, 'the id was forgotten');
    assert.deepEqual(await write(`${t}:c`, later), { applied: false }, 'a recent id is kept');
  });

  it('makes an occurrence its schedule canceled again in place; one the user canceled, or that was attempted, stays', async () => {
    const store = ctx.store();
    const t = await newTenant(store);
    await mustCreate(store, newSchedule(t, 'rev', { nextAt: T0 }));
    const ev = (at: number, payload = '{"n":1}') =>
      newEvent(t, occurrenceId('rev', at), { fireAt: at, requestHash: `h-${at}-${payload}`, payload });
    const made = await store.scheduleAdvance({
      tenantId: t,
      id: 'rev',
      version: 1,
      fromNextAt: T0,
      nextAt: T0 + 3 * SEC,
      firedAdd: 0,
      missedAdd: 0,
      lastOccurrenceAt: T0 + 2 * SEC,
      events: [ev(T0), ev(T0 + SEC), ev(T0 + 2 * SEC)],
      now: T0,
    });
    assert.equal(made.applied, true);
    const paused = await store.eventCancel({
      tenantId: t,
      id: occurrenceId('rev', T0),
      now: T0 + 1,
      reason: OCCURRENCE_CANCEL_REASONS.paused,
    });
    assert.equal(
      paused.kind === 'ok' && paused.event.lastError,
      OCCURRENCE_CANCEL_REASONS.paused,
      'the reason is kept as lastError',
    );
    await store.eventCancel({ tenantId: t, id: occurrenceId('rev', T0 + SEC), now: T0 + 1 });
    const again = await store.scheduleAdvance({
      tenantId: t,
      id: 'rev',
      version: 1,
      fromNextAt: T0 + 3 * SEC,
      nextAt: T0 + 4 * SEC,
      firedAdd: 0,
      missedAdd: 0,
      lastOccurrenceAt: T0 + 3 * SEC,
      events: [ev(T0, '{"n":2}'), ev(T0 + SEC, '{"n":2}'), ev(T0 + 3 * SEC)],
      now: T0 + 2,
    });
    assert.deepEqual(again.applied && again.results.map((r) => r.kind), ['created', 'conflict', 'created']);
    const revived = await mustGet(store, t, occurrenceId('rev', T0));
    assert.deepEqual(
      [revived.state, revived.payload, revived.lastError, revived.dueAt],
      ['scheduled', '{"n":2}', null, T0],
      'scheduled again, with the template as it is now',
    );
    assert.equal(
      (await mustGet(store, t, occurrenceId('rev', T0 + SEC))).state,
      'canceled',
      'the user canceled it: it stays canceled',
    );
    const trace = await store.transitionList({ tenantId: t, eventId: occurrenceId('rev', T0), limit: 10 });
    assert.deepEqual(
      trace.map((x) => [x.fromState, x.toState]),
      [
        [null, 'scheduled'],
        ['scheduled', 'canceled'],
        ['canceled', 'scheduled'],
      ],
    );
    assert.deepEqual(trace[1].detail, { reason: OCCURRENCE_CANCEL_REASONS.paused });
  });

  it('advances several schedules in one call, each by its own compare-and-swap, results in order', async () => {
    const store = ctx.store();
    const t = await newTenant(store);
    await mustCreate(store, newSchedule(t, 'm-b'));
    await mustCreate(store, newSchedule(t, 'm-a'));
    const ev = (id: string, at: number) =>
      newEvent(t, occurrenceId(id, at), { fireAt: at, requestHash: `h-${id}-${at}` });
    const advance = (id: string, fromNextAt: number, nextAt: number) => ({
      tenantId: t,
      id,
      version: 1,
      fromNextAt,
      nextAt,
      firedAdd: 0,
      missedAdd: 1,
      lastMissed: { at: T0, count: 1, reason: 'late' },
      lastOccurrenceAt: fromNextAt,
      events: [ev(id, fromNextAt)],
      now: T0,
    });
    const results = await store.scheduleAdvanceMany({
      advances: [
        advance('m-b', T0, T0 + SEC),
        advance('m-a', T0 + 5 * SEC, T0 + 6 * SEC),
        advance('m-a', T0, T0 + SEC),
      ],
    });
    assert.deepEqual(
      results.map((r) => r.applied),
      [true, false, true],
      'the stale cursor of the second loses alone',
    );
    assert.deepEqual(
      results.map((r) => (r.applied ? r.results.map((x) => x.kind) : [])),
      [['created'], [], ['created']],
    );
    for (const id of ['m-a', 'm-b']) {
      const s = await store.scheduleGet({ tenantId: t, id });
      assert.deepEqual([s?.nextAt, s?.missedCount, s?.lastMissed?.reason], [T0 + SEC, 1, 'late']);
    }
    assert.equal(
      await store.eventGet({ tenantId: t, id: occurrenceId('m-a', T0 + 5 * SEC) }),
      null,
      'the lost advance inserted nothing',
    );
  });

  it('lists a schedule’s occurrences newest first, paged, and nothing of other schedules or tenants', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const at = (k: number) => T0 + k * SEC;
    const events = [0, 1, 2, 3].map((k) => newEvent(a, occurrenceId('rep', at(k)), { fireAt: at(k) }));
    events.push(
      newEvent(a, occurrenceId('rep2', at(0))),
      newEvent(a, 'rep'),
      newEvent(a, 'repA'),
      newEvent(b, occurrenceId('rep', at(9))),
    );
    await store.eventInsertMany({ events, now: T0 });
    const page1 = await store.scheduleOccurrenceList({ tenantId: a, scheduleId: 'rep', limit: 3 });
    assert.deepEqual(
      page1.map((e) => e.id),
      [3, 2, 1].map((k) => occurrenceId('rep', at(k))),
    );
    const page2 = await store.scheduleOccurrenceList({
      tenantId: a,
      scheduleId: 'rep',
      beforeId: page1[2].id,
      limit: 3,
    });
    assert.deepEqual(
      page2.map((e) => e.id),
      [occurrenceId('rep', at(0))],
    );
    assert.deepEqual(
      (await store.scheduleOccurrenceList({ tenantId: b, scheduleId: 'rep', limit: 10 })).map((e) => e.id),
      [occurrenceId('rep', at(9))],
    );
  });
}
