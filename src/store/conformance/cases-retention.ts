/** Conformance: eventDeleteTerminal, the retention cleaner's one write. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { EventRecord } from '../../core/event.ts';
import { RETENTION_STATES, type RetentionState } from '../../core/retention.ts';
import type { Store } from '../store.ts';
import {
  insertOne,
  mustClaim,
  mustGet,
  mustRecord,
  newEvent,
  newTenant,
  outcome,
  SEC,
  T0,
  twoTenants,
  type SuiteContext,
} from './fixtures.ts';

/** Creates event `id` and moves it to terminal `state` at `at` (succeeded and discarded after one attempt, archived after a failed one). */
async function finish(
  store: Store,
  tenantId: string,
  id: string,
  state: RetentionState,
  at: number,
): Promise<EventRecord> {
  const e = await insertOne(store, newEvent(tenantId, id, { fireAt: at - 2 }), at - 3);
  if (state === 'canceled') {
    const r = await store.eventCancel({ tenantId, id, now: at });
    assert.equal(r.kind, 'ok');
    return mustGet(store, tenantId, id);
  }
  const claimed = await mustClaim(store, e, at - 1);
  const done = await mustRecord(store, outcome(claimed, state, { status: state === 'succeeded' ? 200 : 500 }), at);
  assert.deepEqual([done.state, done.updatedAt], [state, at]);
  return done;
}

async function traceLength(store: Store, tenantId: string, id: string): Promise<number> {
  return (await store.transitionList({ tenantId, eventId: id, limit: 100 })).length;
}

export function retentionCases(ctx: SuiteContext): void {
  it('deletes exactly the terminal events finished before the cutoff, with their traces, and nothing else', async () => {
    const store = ctx.store();
    const [tenantId, other] = await twoTenants(store);
    const cutoff = T0 + 1_000 * SEC;
    for (const state of RETENTION_STATES) {
      await finish(store, tenantId, `old-${state}`, state, T0 + 10 * SEC);
      await finish(store, tenantId, `new-${state}`, state, cutoff + SEC);
      await finish(store, other, `old-${state}`, state, T0 + 10 * SEC);
    }
    // Live events whose last change is far older than the cutoff.
    await insertOne(store, newEvent(tenantId, 'live-scheduled', { fireAt: T0 + 10_000 * SEC }), T0);
    const running = await mustClaim(
      store,
      await insertOne(store, newEvent(tenantId, 'live-executing'), T0),
      T0 + 10 * SEC,
    );
    const retrying = await mustClaim(
      store,
      await insertOne(store, newEvent(tenantId, 'live-retry'), T0),
      T0 + 10 * SEC,
    );
    await mustRecord(store, outcome(retrying, 'awaiting_retry', { retryAt: T0 + 20_000 * SEC }), T0 + 11 * SEC);
    const oldTraces = Object.fromEntries(
      await Promise.all(
        RETENTION_STATES.map(async (s) => [s, await traceLength(store, tenantId, `old-${s}`)] as const),
      ),
    );

    for (const state of RETENTION_STATES) {
      const r = await store.eventDeleteTerminal({ tenantId, state, finishedBefore: cutoff, limit: 100 });
      // Rows deleted: the trace but its first entry, `created`, which is read from the event row.
      assert.deepEqual(r, { events: 1, transitions: oldTraces[state] - 1 }, state);
      assert.equal(await store.eventGet({ tenantId, id: `old-${state}` }), null, `old-${state} deleted`);
      assert.equal(await traceLength(store, tenantId, `old-${state}`), 0, `old-${state}'s trace deleted`);
      assert.equal((await mustGet(store, tenantId, `new-${state}`)).state, state, `new-${state} kept`);
      assert.ok((await traceLength(store, tenantId, `new-${state}`)) >= 2, `new-${state}'s trace kept`);
      assert.equal((await mustGet(store, other, `old-${state}`)).state, state, "another tenant's event kept");
      assert.ok((await traceLength(store, other, `old-${state}`)) >= 2, "another tenant's trace kept");
    }
    assert.equal((await mustGet(store, tenantId, 'live-scheduled')).state, 'scheduled');
    assert.equal((await mustGet(store, tenantId, 'live-executing')).version, running.version);
    assert.equal((await mustGet(store, tenantId, 'live-retry')).state, 'awaiting_retry');
    for (const state of RETENTION_STATES) {
      assert.deepEqual(await store.eventDeleteTerminal({ tenantId, state, finishedBefore: cutoff, limit: 100 }), {
        events: 0,
        transitions: 0,
      });
    }
  });

  it('deletes at most `limit` events per call, oldest first; a short result means none is left', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    // Finished in the reverse order of their ids, so "oldest first" cannot be id order.
    for (let i = 0; i < 7; i++) await finish(store, tenantId, `e${i}`, 'succeeded', T0 + (100 - i) * SEC);
    const left = async () =>
      (await Promise.all([0, 1, 2, 3, 4, 5, 6].map((i) => store.eventGet({ tenantId, id: `e${i}` })))).flatMap((e) =>
        e ? [e.id] : [],
      );
    const params = { tenantId, state: 'succeeded' as const, finishedBefore: T0 + 1_000 * SEC, limit: 3 };

    assert.equal((await store.eventDeleteTerminal(params)).events, 3);
    assert.deepEqual(await left(), ['e0', 'e1', 'e2', 'e3'], 'the three finished first are gone');
    assert.equal((await store.eventDeleteTerminal(params)).events, 3);
    assert.deepEqual(await left(), ['e0']);
    assert.deepEqual(
      await store.eventDeleteTerminal(params),
      { events: 1, transitions: 2 },
      'claimed and succeeded: `created` is no row',
    );
    assert.deepEqual(await store.eventDeleteTerminal(params), { events: 0, transitions: 0 });
    await assert.rejects(store.eventDeleteTerminal({ ...params, limit: 0 }), RangeError);
  });

  it('keeps an event finished exactly at the cutoff, and any event in another state than asked', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await finish(store, tenantId, 'at-cutoff', 'discarded', T0 + 50 * SEC);
    await finish(store, tenantId, 'archived', 'archived', T0 + 10 * SEC);
    assert.equal(
      (await store.eventDeleteTerminal({ tenantId, state: 'discarded', finishedBefore: T0 + 50 * SEC, limit: 10 }))
        .events,
      0,
    );
    assert.equal(
      (await mustGet(store, tenantId, 'archived')).state,
      'archived',
      'a discarded cutoff leaves archived events',
    );
    assert.equal(
      (await store.eventDeleteTerminal({ tenantId, state: 'discarded', finishedBefore: T0 + 50 * SEC + 1, limit: 10 }))
        .events,
      1,
    );
  });

  it('never deletes a live event, even one replayed long ago or passed as a state', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const archived = await finish(store, tenantId, 'replayed', 'archived', T0 + 10 * SEC);
    const replayed = await store.eventReplay({
      tenantId,
      id: 'replayed',
      expectedVersion: archived.version,
      now: T0 + 11 * SEC,
    });
    assert.equal(replayed.kind, 'ok');
    for (const state of RETENTION_STATES) {
      assert.equal(
        (await store.eventDeleteTerminal({ tenantId, state, finishedBefore: T0 + 100_000 * SEC, limit: 10 })).events,
        0,
        state,
      );
    }
    assert.equal((await mustGet(store, tenantId, 'replayed')).state, 'scheduled');
    assert.equal(await traceLength(store, tenantId, 'replayed'), 4);
    await insertOne(store, newEvent(tenantId, 'scheduled'), T0);
    for (const state of ['scheduled', 'executing', 'awaiting_retry']) {
      await assert.rejects(
        store.eventDeleteTerminal({
          tenantId,
          state: state as RetentionState,
          finishedBefore: T0 + 100_000 * SEC,
          limit: 10,
        }),
        RangeError,
      );
    }
    assert.equal((await mustGet(store, tenantId, 'scheduled')).state, 'scheduled');
  });

  it('lets the id be used again after the event is deleted, with a fresh trace', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await finish(store, tenantId, 'again', 'succeeded', T0 + 10 * SEC);
    assert.equal(
      (await store.eventDeleteTerminal({ tenantId, state: 'succeeded', finishedBefore: T0 + 20 * SEC, limit: 10 }))
        .events,
      1,
    );
    const [r] = await store.eventInsertMany({
      events: [newEvent(tenantId, 'again', { payload: '{"v":2}' })],
      now: T0 + 30 * SEC,
    });
    assert.equal(r.kind, 'created');
    const trace = await store.transitionList({ tenantId, eventId: 'again', limit: 10 });
    assert.deepEqual(
      trace.map((t) => [t.seq, t.kind, t.at]),
      [[1, 'created', T0 + 30 * SEC]],
    );
  });
}
