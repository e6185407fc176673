/**
 * /v1/schedules in process (app.inject) over a real SQLite store and a SimClock, with the real
 * materialiser run by hand: the contract (create, idempotent repeat, get with next occurrences in
 * UTC and the zone, list, preview, trigger, delete), bad input (400 naming the field, nothing
 * written), tenant isolation, and how pause, resume, edits and deletes treat occurrences already
 * made (canceled or updated) and those not yet made (missed policy).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { Materialiser } from '../../src/schedules/materialiser.ts';
import { bearer, makeTestApp, type TestApp } from '../support/app.ts';

let t: TestApp;
let materialiser: Materialiser;
const SEC = 1_000;

before(async () => {
  t = await makeTestApp();
  materialiser = new Materialiser(
    {
      store: t.store,
      clock: t.clock,
      logger: pino({ level: 'silent' }),
      shardCount: 16,
      shards: () => null,
      events: { changed: () => {} },
    },
    { horizonMs: 10 * SEC, refillMs: 0 },
  );
  t.deps.scheduleAheadMs = 10 * SEC;
});
after(async () => {
  await t.cleanup();
});

async function call(
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  payload?: unknown,
  key = t.tenantKey,
  headers: Record<string, string> = {},
) {
  const res = await t.app.inject({
    method,
    url,
    headers: { ...bearer(key), ...headers },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
  return { status: res.statusCode, body: res.body ? res.json() : null, headers: res.headers };
}

async function occurrences(id: string): Promise<{ id: string; state: string; payload: unknown }[]> {
  const res = await call('GET', `/v1/events?schedule=${id}&limit=1000`);
  assert.equal(res.status, 200);
  return res.body.events;
}

const HOOK = { url: 'http://127.0.0.1:9/hook' };

describe('schedules API', () => {
  it('creates a cron schedule in a zone; GET shows the next occurrences in UTC and in the zone', async () => {
    // The SimClock starts at 2026-01-01T12:00:00Z: 13:00 in Paris.
    const body = {
      id: 'paris-9am',
      cron: '0 9 * * MON-FRI',
      timezone: 'Europe/Paris',
      destination: HOOK,
      payload: { report: 'daily' },
      tags: { team: 'ops' },
    };
    const created = await call('POST', '/v1/schedules', body);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.headers.etag, '"1"');
    const got = await call('GET', '/v1/schedules/paris-9am');
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.next.slice(0, 2), [
      { at: '2026-01-02T08:00:00.000Z', local: '2026-01-02T09:00:00.000+01:00' },
      { at: '2026-01-05T08:00:00.000Z', local: '2026-01-05T09:00:00.000+01:00' },
    ]);
    assert.deepEqual(
      [got.body.cron, got.body.timezone, got.body.missed, got.body.catchUpMax, got.body.paused],
      ['0 9 * * MON-FRI', 'Europe/Paris', 'skip', 100, false],
    );
    assert.deepEqual(
      [got.body.payload, got.body.destination, got.body.tags],
      [{ report: 'daily' }, HOOK, { team: 'ops' }],
    );
    assert.equal((await call('POST', '/v1/schedules', body)).status, 200, 'the same body again: the stored schedule');
    const other = await call('POST', '/v1/schedules', { ...body, cron: '0 10 * * *' });
    assert.equal(other.status, 409);
    const list = await call('GET', '/v1/schedules');
    assert.deepEqual(
      list.body.schedules.map((s: { id: string }) => s.id),
      ['paris-9am'],
    );
  });

  it('refuses bad input with a 400 naming the field, and creates nothing', async () => {
    const base = { id: 'bad', every: '1m', destination: HOOK };
    const cases: [unknown, string][] = [
      [{ ...base, every: undefined, cron: '61 * * * *' }, 'cron'],
      [{ ...base, every: undefined, cron: '* * *' }, 'cron'],
      [{ ...base, every: undefined, cron: '0 0 L * *' }, 'cron'],
      [{ ...base, cron: '* * * * *' }, 'every'],
      [{ ...base, every: undefined }, 'cron'],
      [{ ...base, every: 0 }, 'every'],
      [{ ...base, every: '0s' }, 'every'],
      [{ ...base, every: 'soon' }, 'every'],
      [{ ...base, timezone: 'Mars/Olympus' }, 'timezone'],
      [{ ...base, timezone: '+05:00' }, 'timezone'],
      [{ ...base, startAt: '2026-02-01T00:00:00Z', endAt: '2026-01-01T00:00:00Z' }, 'endAt'],
      [{ ...base, startAt: 'tomorrow' }, 'startAt'],
      [{ ...base, startAt: '2025-01-01T00:00:00Z', endAt: '2025-06-01T00:00:00Z' }, 'endAt'],
      [{ ...base, destination: 'no-such-destination' }, 'destination'],
      [{ ...base, destination: { url: 'http://10.1.2.3/x' } }, 'destination.url'],
      [{ ...base, headers: { 'webhook-id': 'x' } }, 'headers.webhook-id'],
      [{ ...base, expireAfter: 'later' }, 'expireAfter'],
    ];
    for (const [body, field] of cases) {
      const res = await call('POST', '/v1/schedules', JSON.parse(JSON.stringify(body)));
      assert.equal(res.status, 400, `${JSON.stringify(body)} → ${res.status} ${JSON.stringify(res.body)}`);
      assert.equal(
        res.body.error.details[0].field,
        field,
        `${JSON.stringify(body)}: ${JSON.stringify(res.body.error)}`,
      );
    }
    for (const body of [
      { ...base, missed: 'sometimes' },
      { ...base, catchUpMax: -1 },
      { ...base, id: 'has@at' },
      { ...base, color: 'red' },
    ]) {
      assert.equal((await call('POST', '/v1/schedules', body)).status, 400, JSON.stringify(body));
    }
    assert.equal((await call('GET', '/v1/schedules/bad')).status, 404);
  });

  it('previews a body without creating it: New York over the spring-forward night', async () => {
    const res = await call('POST', '/v1/schedules/preview', {
      cron: '30 2 * * *',
      timezone: 'America/New_York',
      startAt: '2026-03-07T00:00:00Z',
      count: 3,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.next, [
      { at: '2026-03-07T07:30:00.000Z', local: '2026-03-07T02:30:00.000-05:00' },
      { at: '2026-03-08T07:00:00.000Z', local: '2026-03-08T03:00:00.000-04:00' },
      { at: '2026-03-09T06:30:00.000Z', local: '2026-03-09T02:30:00.000-04:00' },
    ]);
    assert.equal((await call('POST', '/v1/schedules/preview', { every: '0s' })).body.error.details[0].field, 'every');
    assert.equal((await call('GET', '/v1/schedules/preview')).status, 404, 'nothing was created');
  });

  it('keeps tenants apart', async () => {
    assert.equal((await call('POST', '/v1/schedules', { id: 'mine', every: '1h', destination: HOOK })).status, 201);
    assert.equal((await call('GET', '/v1/schedules/mine', undefined, t.tenantKeyB)).status, 404);
    assert.equal((await call('PATCH', '/v1/schedules/mine', { paused: true }, t.tenantKeyB)).status, 404);
    assert.equal((await call('DELETE', '/v1/schedules/mine', undefined, t.tenantKeyB)).status, 404);
    assert.equal((await call('POST', '/v1/schedules/mine/trigger', undefined, t.tenantKeyB)).status, 404);
    assert.deepEqual((await call('GET', '/v1/schedules', undefined, t.tenantKeyB)).body.schedules, []);
    assert.equal((await call('DELETE', '/v1/schedules/mine')).status, 200);
  });

  it('occurrences become events <id>@<time>; pause cancels those made, resume applies missed, edits update them, delete cancels them', async () => {
    const start = t.clock.now();
    const created = await call('POST', '/v1/schedules', {
      id: 'tick',
      every: '1s',
      destination: HOOK,
      payload: { v: 1 },
      missed: 'fire-once',
    });
    assert.equal(created.status, 201);
    let occ = await occurrences('tick');
    assert.equal(occ.length, 11, 'the create made now .. now + 10 s at once');
    assert.equal((await materialiser.runOnce()).made, 0, 'nothing left for the materialiser');
    assert.equal(occ[0].id, `tick@${new Date(start + 10 * SEC).toISOString()}`, 'newest first');
    assert.ok(occ.every((e) => e.state === 'scheduled'));

    // An edit of the payload updates the occurrences made and not fired.
    const edited = await call('PATCH', '/v1/schedules/tick', { payload: { v: 2 } }, t.tenantKey, { 'if-match': '"1"' });
    assert.equal(edited.status, 200, JSON.stringify(edited.body));
    occ = await occurrences('tick');
    assert.ok(occ.every((e) => JSON.stringify(e.payload) === '{"v":2}'));
    assert.equal(
      (await call('PATCH', '/v1/schedules/tick', { paused: true }, t.tenantKey, { 'if-match': '"1"' })).status,
      412,
    );

    // Pause: the occurrences made are canceled; none is made while paused.
    const paused = await call('PATCH', '/v1/schedules/tick', { paused: true });
    assert.equal(paused.body.paused, true);
    assert.ok((await occurrences('tick')).every((e) => e.state === 'canceled'));
    await t.clock.advance(30 * SEC);
    await materialiser.runOnce();
    assert.equal((await occurrences('tick')).length, 11);

    // Resume after 30 s: as if each occurrence were computed at its own time. The pause put the
    // cursor back to start: start .. start+28s passed while paused (before now - 1 s); fire-once
    // fires the latest of them (made again in place) and counts the others; start+29s .. start+40s
    // are made at once by the resume.
    const resumed = await call('PATCH', '/v1/schedules/tick', { paused: false });
    assert.equal(resumed.body.missedCount, 28, 'the missed ones but the latest');
    occ = await occurrences('tick');
    const scheduled = occ.filter((e) => e.state === 'scheduled').map((e) => e.id);
    assert.equal(scheduled.at(-1), `tick@${new Date(start + 28 * SEC).toISOString()}`, 'the latest missed one');
    assert.equal(scheduled.length, 1 + 12, 'and start+29s .. start+40s');
    assert.equal((await materialiser.runOnce()).made, 0, 'the resume made them');

    // Trigger: one occurrence now, outside the timing.
    await t.clock.advance(250);
    const fired = await call('POST', '/v1/schedules/tick/trigger');
    assert.equal(fired.status, 201);
    assert.equal(fired.body.id, `tick@${new Date(t.clock.now()).toISOString()}`);

    // Paging through the occurrences.
    const page1 = await call('GET', '/v1/events?schedule=tick&limit=5');
    const page2 = await call(
      'GET',
      `/v1/events?schedule=tick&limit=5&cursor=${encodeURIComponent(page1.body.nextCursor)}`,
    );
    assert.equal(page1.body.events.length, 5);
    assert.ok(page2.body.events[0].id < page1.body.events[4].id);
    assert.equal((await call('GET', '/v1/events?schedule=tick&state=scheduled')).status, 400);

    // Delete: the schedule is gone and its unfired occurrences are canceled.
    assert.equal((await call('DELETE', '/v1/schedules/tick')).status, 200);
    assert.equal((await call('GET', '/v1/schedules/tick')).status, 404);
    assert.ok((await occurrences('tick')).every((e) => e.state === 'canceled'));
    await t.clock.advance(5 * SEC);
    const before = (await occurrences('tick')).length;
    await materialiser.runOnce();
    assert.equal((await occurrences('tick')).length, before, 'nothing is made after the delete');
  });

  it('an edit of an every schedule created without startAt keeps its anchor and its occurrences', async () => {
    assert.equal(
      (await call('POST', '/v1/schedules', { id: 'anchored', every: '1s', destination: HOOK, payload: 1 })).status,
      201,
    );
    await materialiser.runOnce();
    await t.clock.advance(1_500);
    const res = await call('PATCH', '/v1/schedules/anchored', { payload: 2 });
    assert.equal(res.status, 200);
    const occ = await occurrences('anchored');
    assert.ok(
      occ.every((e) => e.state === 'scheduled' && e.payload === 2),
      'updated, none canceled',
    );
    assert.equal(res.body.startAt, (await call('GET', '/v1/schedules/anchored')).body.startAt);
    await materialiser.runOnce();
    const ids = (await occurrences('anchored')).map((e) => e.id);
    assert.equal(new Set(ids).size, ids.length);
    const anchor = Date.parse(res.body.startAt);
    assert.ok(
      ids.every((id) => (Date.parse(id.slice('anchored@'.length)) - anchor) % 1_000 === 0),
      'still on the 1 s grid of its anchor',
    );
    assert.equal((await call('DELETE', '/v1/schedules/anchored')).status, 200);
  });

  it('the template’s type goes on every occurrence, and an edit of it on those made and not fired', async () => {
    assert.equal(
      (await call('POST', '/v1/schedules', { id: 'typed', every: '1s', destination: HOOK, type: 'report.daily' }))
        .status,
      201,
    );
    assert.equal((await call('GET', '/v1/schedules/typed')).body.type, 'report.daily');
    await materialiser.runOnce();
    const stored = await t.store.scheduleOccurrenceList({ tenantId: t.tenantId, scheduleId: 'typed', limit: 100 });
    assert.ok(stored.length > 0 && stored.every((e) => e.type === 'report.daily'));
    assert.equal((await call('PATCH', '/v1/schedules/typed', { type: 'report.hourly' })).status, 200);
    const after = await t.store.scheduleOccurrenceList({ tenantId: t.tenantId, scheduleId: 'typed', limit: 100 });
    assert.ok(after.every((e) => e.type === 'report.hourly' && e.state === 'scheduled'));
    assert.equal(
      (
        await call('POST', '/v1/schedules', {
          id: 'badtype',
          every: '1s',
          destination: HOOK,
          type: 'no spaces allowed',
        })
      ).status,
      400,
    );
    assert.equal((await call('DELETE', '/v1/schedules/typed')).status, 200);
  });

  it('a new timing cancels the occurrences made that it no longer has, and keeps those it still has', async () => {
    assert.equal((await call('POST', '/v1/schedules', { id: 'two', every: '1s', destination: HOOK })).status, 201);
    await materialiser.runOnce();
    const res = await call('PATCH', '/v1/schedules/two', { every: '2s', startAt: t.clock.now() });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const occ = await occurrences('two');
    const live = occ.filter((e) => e.state === 'scheduled').length;
    const canceled = occ.filter((e) => e.state === 'canceled').length;
    assert.deepEqual([live, canceled], [6, 5], 'even seconds kept, odd ones canceled');
    await materialiser.runOnce();
    assert.equal((await occurrences('two')).length, 11, 'nothing made twice');
  });
});
