/**
 * Bulk operations through the API on both stores: dry run (count, bound, sample, nothing changed),
 * a job per action run by a BulkRunner (as a node runs it), conditional writes that skip events
 * changed meanwhile, the per-tenant bound on running jobs, and bad input.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import pino from 'pino';
import { BULK_RUNNING_PER_TENANT_MAX, DRY_RUN_PAGE_SIZE, DRY_RUN_PAGES_MAX } from '../../src/bulk/index.ts';
import type { EventRecord } from '../../src/core/event.ts';
import { BulkRunner } from '../../src/bulk/runner.ts';
import type { Store } from '../../src/store/store.ts';
import { bearer, moveEvent, TEST_BACKENDS, type TestApp } from '../support/app.ts';

const HOUR = 3_600_000;

for (const [backend, make] of TEST_BACKENDS) {
  describe(`bulk operations (${backend})`, () => {
    let t: TestApp<Store>;
    let runner: BulkRunner;
    const changed: EventRecord[] = [];
    before(async () => {
      t = await make({ limits: { batchEventsMax: 1000 } });
      for (const name of ['orders', 'billing', 'spare']) {
        const put = await req('PUT', `/v1/destinations/${name}`, { url: `https://${name}.example.com/hook` });
        assert.equal(put.statusCode, 201);
      }
      runner = new BulkRunner(
        {
          store: t.store,
          clock: t.clock,
          logger: pino({ level: 'silent' }),
          owner: 'test-node',
          events: { changed: (e) => changed.push(...e) },
        },
        { batchSize: 7, pauseFactor: 0 },
      );
    });
    after(() => t.cleanup());

    function req(method: InjectOptions['method'], url: string, payload?: unknown, key?: string) {
      return t.app.inject({
        method,
        url,
        headers: bearer(key ?? t.tenantKey),
        ...(payload === undefined ? {} : { payload: payload as object }),
      });
    }

    async function schedule(events: Record<string, unknown>[]) {
      for (let i = 0; i < events.length; i += 1000) {
        const res = await req('POST', '/v1/events/batch', { events: events.slice(i, i + 1000) });
        assert.equal(res.statusCode, 200, res.body);
        assert.ok(
          res.json().results.every((r: { status: string }) => r.status === 'created'),
          res.body,
        );
      }
    }

    /** Runs jobs until none is left; returns the job as GET shows it. */
    async function runJob(id: string) {
      for (let i = 0; i < 100; i++) {
        const run = await runner.runOnce();
        if (run.jobId === null) break;
      }
      const res = await req('GET', `/v1/bulk/${id}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    }

    async function bulk(body: Record<string, unknown>) {
      const res = await req('POST', '/v1/events/bulk', body);
      assert.equal(res.statusCode, 202, res.body);
      assert.match(res.json().id, /^bulk_[0-9a-z]{26}$/);
      assert.equal(res.headers.location, `/v1/bulk/${res.json().id}`);
      return res.json().id as string;
    }

    test('a dry run counts and samples what a filter selects, and changes nothing', async () => {
      const now = t.clock.now();
      await schedule(
        Array.from({ length: 30 }, (_, i) => ({
          id: `dry-${i}`,
          destination: i % 3 ? 'orders' : 'billing',
          fireAt: now + HOUR + i,
          type: 'dry.kind',
          tags: { team: i % 2 ? 'odd' : 'even' },
        })),
      );
      const res = await req('POST', '/v1/events/bulk', {
        filter: { type: 'dry.kind', destination: 'billing', tags: { team: 'even' } },
        action: 'cancel',
        dryRun: true,
      });
      assert.equal(res.statusCode, 200, res.body);
      const d = res.json();
      // billing: i % 3 == 0; even: i % 2 == 0 → i % 6 == 0: 0, 6, 12, 18, 24.
      assert.deepEqual([d.matched, d.exact, d.applicable], [5, true, 5]);
      assert.deepEqual(
        d.sample.map((e: { id: string }) => e.id),
        ['dry-24', 'dry-18', 'dry-12', 'dry-6', 'dry-0'],
      );
      assert.equal((await req('GET', '/v1/events/dry-0')).json().state, 'scheduled');
      const replay = (
        await req('POST', '/v1/events/bulk', { filter: { type: 'dry.kind' }, action: 'replay', dryRun: true })
      ).json();
      assert.deepEqual([replay.matched, replay.applicable], [30, 0], 'scheduled events cannot be replayed');
    });

    test('a dry run stops counting at its bound and says "at least"', async () => {
      const n = DRY_RUN_PAGES_MAX * DRY_RUN_PAGE_SIZE + 5;
      await schedule(Array.from({ length: n }, (_, i) => ({ destination: 'spare', delay: '2h', type: 'many.kind' })));
      const d = (
        await req('POST', '/v1/events/bulk', { filter: { type: 'many.kind' }, action: 'cancel', dryRun: true })
      ).json();
      assert.deepEqual([d.matched, d.exact, d.sample.length], [DRY_RUN_PAGES_MAX * DRY_RUN_PAGE_SIZE, false, 10]);
    });

    test('shifts the selected events by a duration, in batches, each a transition naming the job', async () => {
      const now = t.clock.now();
      await schedule(
        Array.from({ length: 20 }, (_, i) => ({
          id: `sh-${i}`,
          destination: 'orders',
          fireAt: now + HOUR,
          expireAfter: '1h',
          type: 'shift.kind',
        })),
      );
      const id = await bulk({ filter: { type: 'shift.kind' }, action: { shift: '+1h' } });
      const pending = (await req('GET', `/v1/bulk/${id}`)).json();
      assert.deepEqual([pending.state, pending.done, pending.action], ['running', 0, { kind: 'shift', shiftMs: HOUR }]);
      const job = await runJob(id);
      assert.deepEqual([job.state, job.matched, job.done, job.skipped], ['succeeded', 20, 20, 0]);
      assert.ok(job.finishedAt);
      const ev = (await req('GET', '/v1/events/sh-3')).json();
      assert.equal(ev.fireAt, new Date(now + 2 * HOUR).toISOString());
      assert.equal(ev.expireAt, new Date(now + 3 * HOUR).toISOString(), 'the expiry window moves along');
      const last = (await req('GET', '/v1/events/sh-3/transitions')).json().transitions.at(-1);
      assert.deepEqual(
        [last.kind, last.detail.operation, last.detail.operationId, last.detail.fields],
        ['updated', 'bulk_shift', id, ['fireAt', 'expireAt']],
      );
      assert.ok(
        changed.some((e) => e.id === 'sh-3' && e.fireAt === now + 2 * HOUR),
        'the scheduler is told',
      );
      const back = await bulk({ filter: { type: 'shift.kind' }, action: { shift: '-30m' } });
      assert.equal((await runJob(back)).done, 20);
      assert.equal((await req('GET', '/v1/events/sh-3')).json().fireAt, new Date(now + 90 * 60_000).toISOString());
    });

    test('cancels and redirects; events in a state the action does not apply to are skipped and counted', async () => {
      const now = t.clock.now();
      await schedule(
        Array.from({ length: 10 }, (_, i) => ({
          id: `cx-${i}`,
          destination: 'orders',
          fireAt: now + i,
          group: `cx-${i}`,
          type: 'cancel.kind',
        })),
      );
      await moveEvent(t.store, t.tenantId, 'cx-0', 'succeeded', now + 10);
      await moveEvent(t.store, t.tenantId, 'cx-1', 'awaiting_retry', now + 10);
      const id = await bulk({ filter: { type: 'cancel.kind' }, action: 'cancel' });
      // An edit after the job was asked for but before its page is read is seen by the job (the
      // page reads the event as it is then): cx-2 is still canceled. The race between read and
      // write is the next test's.
      await req('PATCH', '/v1/events/cx-2', { payload: { edited: true } });
      const job = await runJob(id);
      assert.deepEqual([job.state, job.matched, job.done, job.skipped], ['succeeded', 10, 9, 1]);
      assert.equal((await req('GET', '/v1/events/cx-0')).json().state, 'succeeded');
      assert.equal((await req('GET', '/v1/events/cx-1')).json().state, 'canceled', 'awaiting_retry can be canceled');
      assert.equal((await req('GET', '/v1/events/cx-2')).json().state, 'canceled');

      await schedule(
        Array.from({ length: 5 }, (_, i) => ({
          id: `rd-${i}`,
          destination: 'orders',
          delay: '1h',
          tags: { move: 'yes' },
        })),
      );
      const rd = await bulk({
        filter: { tags: { move: 'yes' }, destination: 'orders' },
        action: { redirect: 'billing' },
      });
      const r = await runJob(rd);
      assert.deepEqual([r.matched, r.done], [5, 5]);
      assert.equal((await req('GET', '/v1/events/rd-4')).json().destination, 'billing');
    });

    test('skips an event changed between the page read and its write (the conditional write)', async () => {
      await schedule([
        { id: 'race-1', destination: 'orders', delay: '1h', type: 'race.kind' },
        { id: 'race-2', destination: 'orders', delay: '1h', type: 'race.kind' },
      ]);
      const id = await bulk({ filter: { type: 'race.kind' }, action: { shift: '+1m' } });
      // A store whose eventList answers, then lets a user edit race-1, as if the edit landed between them.
      const racing: Store = Object.create(t.store, {
        eventList: {
          value: async (p: Parameters<Store['eventList']>[0]) => {
            const page = await t.store.eventList(p);
            await t.store.eventUpdate({
              tenantId: t.tenantId,
              id: 'race-1',
              now: t.clock.now(),
              patch: { payload: '{"raced":true}' },
            });
            return page;
          },
        },
      });
      const racer = new BulkRunner(
        {
          store: racing,
          clock: t.clock,
          logger: pino({ level: 'silent' }),
          owner: 'test-node',
          events: { changed: () => {} },
        },
        { batchSize: 10, pauseFactor: 0 },
      );
      await racer.runOnce();
      const job = (await req('GET', `/v1/bulk/${id}`)).json();
      assert.deepEqual([job.state, job.matched, job.done, job.skipped], ['succeeded', 2, 1, 1]);
      const raced = (await req('GET', '/v1/events/race-1')).json();
      assert.deepEqual(raced.payload, { raced: true }, 'the edit stands; the shift did not overwrite it');
    });

    test('a job stopped part way is taken over at its cursor once its lease ends; every event changed once', async () => {
      const now = t.clock.now();
      const n = 60;
      await schedule(
        Array.from({ length: n }, (_, i) => ({
          id: `to-${i}`,
          destination: 'orders',
          fireAt: now + HOUR + i,
          type: 'takeover.kind',
        })),
      );
      const id = await bulk({ filter: { type: 'takeover.kind' }, action: { shift: '+1m' } });
      const stop = new AbortController();
      const first = new BulkRunner(
        {
          store: t.store,
          clock: t.clock,
          logger: pino({ level: 'silent' }),
          owner: 'node-1',
          events: { changed: () => {} },
          onStep: () => stop.abort(),
        },
        { batchSize: 25, pauseFactor: 0, leaseMs: 30_000 },
      );
      assert.equal((await first.runOnce(stop.signal)).end, 'stopped');
      const part = (await req('GET', `/v1/bulk/${id}`)).json();
      assert.deepEqual([part.state, part.done], ['running', 25]);
      const second = new BulkRunner(
        {
          store: t.store,
          clock: t.clock,
          logger: pino({ level: 'silent' }),
          owner: 'node-2',
          events: { changed: () => {} },
        },
        { batchSize: 25, pauseFactor: 0 },
      );
      if (t.store.capabilities.multiNode) {
        assert.equal((await second.runOnce()).jobId, null, 'the lease of node-1 keeps node-2 out');
        await t.clock.advance(30_000);
      }
      const run = await second.runOnce();
      assert.deepEqual([run.jobId, run.end], [id, 'finished']);
      const job = (await req('GET', `/v1/bulk/${id}`)).json();
      assert.deepEqual([job.state, job.matched, job.done, job.skipped], ['succeeded', n, n, 0]);
      for (const i of [0, 30, 59])
        assert.equal(
          (await req('GET', `/v1/events/to-${i}`)).json().fireAt,
          new Date(now + HOUR + i + 60_000).toISOString(),
        );
    });

    test('two runners at once never step one job (PostgreSQL: nodes share the store)', {
      skip: backend === 'postgres' ? false : 'a SQLite store has one process, so one runner',
    }, async () => {
      const now = t.clock.now();
      const n = 300;
      await schedule(
        Array.from({ length: n }, (_, i) => ({
          id: `tn-${i}`,
          destination: 'orders',
          fireAt: now + HOUR + i,
          type: 'two.nodes',
        })),
      );
      const id = await bulk({ filter: { type: 'two.nodes' }, action: { shift: '+1m' } });
      const runners = ['node-a', 'node-b'].map(
        (owner) =>
          new BulkRunner(
            { store: t.store, clock: t.clock, logger: pino({ level: 'silent' }), owner, events: { changed: () => {} } },
            { batchSize: 20, pauseFactor: 0 },
          ),
      );
      const runs = await Promise.all(runners.map((r) => r.runOnce()));
      assert.equal(runs.filter((r) => r.jobId === id).length, 1, `one runner ran it: ${JSON.stringify(runs)}`);
      const job = (await req('GET', `/v1/bulk/${id}`)).json();
      assert.deepEqual([job.state, job.matched, job.done], ['succeeded', n, n]);
      const page = (await req('GET', '/v1/events?type=two.nodes&limit=1000')).json();
      const wrong = page.events.filter(
        (e: { id: string; fireAt: string }) => Date.parse(e.fireAt) !== now + HOUR + Number(e.id.slice(3)) + 60_000,
      );
      assert.equal(wrong.length, 0, 'every event shifted exactly once');
    });

    test('replays archived events', async () => {
      const now = t.clock.now();
      await schedule([{ id: 'rp-1', destination: 'orders', fireAt: now, type: 'replay.kind' }]);
      await moveEvent(t.store, t.tenantId, 'rp-1', 'archived', now + 1);
      const job = await runJob(await bulk({ filter: { type: 'replay.kind', state: 'archived' }, action: 'replay' }));
      assert.deepEqual([job.matched, job.done], [1, 1]);
      const ev = (await req('GET', '/v1/events/rp-1')).json();
      assert.equal(ev.state, 'scheduled');
      assert.equal(
        (await req('GET', '/v1/events/rp-1/transitions')).json().transitions.at(-1).detail.operation,
        'bulk_replay',
      );
    });

    test(`allows ${BULK_RUNNING_PER_TENANT_MAX} running jobs per tenant (429 beyond); another tenant has its own`, async () => {
      const body = { filter: { type: 'nothing.here' }, action: 'cancel' };
      const ids = [];
      for (let i = 0; i < BULK_RUNNING_PER_TENANT_MAX; i++) ids.push(await bulk(body));
      const over = await req('POST', '/v1/events/bulk', body);
      assert.equal(over.statusCode, 429, over.body);
      assert.equal((await req('POST', '/v1/events/bulk', body, t.tenantKeyB)).statusCode, 202);
      assert.equal(
        (await req('GET', `/v1/bulk/${ids[0]}`, undefined, t.tenantKeyB)).statusCode,
        404,
        'a job is its tenant’s only',
      );
      for (const id of ids) assert.equal((await runJob(id)).state, 'succeeded');
      assert.equal((await req('POST', '/v1/events/bulk', body)).statusCode, 202, 'room again once they finished');
      await runJob(ids[0]);
    });

    test('refuses bad input with a 400 naming the field, and creates no job', async () => {
      const cases: [unknown, string][] = [
        [{ filter: {}, action: 'cancel' }, 'filter'],
        [{ filter: { type: 'x' }, action: 'delete' }, 'action'],
        [{ filter: { type: 'x' }, action: { shift: '1h' } }, 'action'],
        [{ filter: { type: 'x' }, action: { shift: '+0s' } }, 'action.shift'],
        [{ filter: { type: 'x' }, action: { redirect: 'nowhere' } }, 'action.redirect'],
        [{ filter: { type: 'x', fireAtFrom: 'yesterday' }, action: 'cancel' }, 'fireAtFrom'],
        [{ filter: { state: 'gone' }, action: 'cancel' }, 'state'],
        [{ filter: { type: 'x' }, action: 'cancel', dryRun: 'yes' }, 'dryRun'],
        [{ action: 'cancel' }, 'filter'],
      ];
      for (const [body, field] of cases) {
        const res = await req('POST', '/v1/events/bulk', body);
        assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
        assert.match(JSON.stringify(res.json().error), new RegExp(field), JSON.stringify(body));
      }
      assert.equal((await runner.runOnce()).jobId, null, 'no job was created');
      assert.equal((await req('GET', '/v1/bulk/bulk_00000000000000000000000000')).statusCode, 404);
      assert.equal((await req('GET', '/v1/bulk/nope')).statusCode, 400);
    });
  });
}
