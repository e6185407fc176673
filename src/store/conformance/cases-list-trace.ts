/** Conformance: eventList (filters, cursor), transitionList, eventCountByTenantState, durability. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { EventRecord, EventState } from '../../core/event.ts';
import { LIST_EXAMINED_ROWS_MAX } from '../event-list-plan.ts';
import type { EventListParams, Store } from '../store.ts';
import { transitionPage } from '../transition-page.ts';
import {
  archive,
  insertAll,
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
  withFreshStore,
  type SuiteContext,
  countByState,
} from './fixtures.ts';

/** Follows cursors to the end; returns the ids in order and the page sizes. */
async function listAll(
  store: Store,
  params: EventListParams,
  pagesMax = 100,
): Promise<{ ids: string[]; pages: number[] }> {
  const ids: string[] = [];
  const pages: number[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < pagesMax; i++) {
    const page = await store.eventList({ ...params, cursor });
    ids.push(...page.events.map((e) => e.id));
    pages.push(page.events.length);
    if (page.nextCursor === null) return { ids, pages };
    cursor = page.nextCursor;
  }
  throw new Error('eventList: cursor never ended');
}

export function listCases(ctx: SuiteContext): void {
  it('lists newest first and pages by cursor without loss or repetition', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const ids = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7'];
    await insertAll(
      store,
      ids.slice(0, 3).map((id) => newEvent(tenantId, id)),
    );
    await insertAll(
      store,
      ids.slice(3).map((id) => newEvent(tenantId, id)),
      T0 + 1,
    );
    const { ids: listed, pages } = await listAll(store, { tenantId, limit: 3 });
    assert.deepEqual(listed, [...ids].reverse());
    assert.ok(pages.every((n) => n <= 3) && pages[0] === 3);
    const one = await store.eventList({ tenantId, limit: 100 });
    assert.equal(one.nextCursor, null);
    assert.deepEqual(one.events[0], await mustGet(store, tenantId, 'n7'));
  });

  it('lists events of every state in one seq order, paging across states', async () => {
    // Interleaved states, so a page that walks states one by one would come back out of order.
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const ids = Array.from({ length: 9 }, (_, i) => `s${i}`);
    const evs = await insertAll(
      store,
      ids.map((id) => newEvent(tenantId, id, { fireAt: T0 })),
    );
    for (const i of [1, 4, 7]) await mustClaim(store, evs[i], T0 + SEC);
    for (const i of [2, 5]) assert.equal((await store.eventCancel({ tenantId, id: ids[i], now: T0 })).kind, 'ok');
    const expected = [...ids].reverse();
    for (const limit of [1, 2, 4, 100]) {
      const { ids: listed } = await listAll(store, { tenantId, limit });
      assert.deepEqual(listed, expected, `limit ${limit}`);
    }
    assert.deepEqual(
      (await listAll(store, { tenantId, fromMs: T0, limit: 2 })).ids,
      expected,
      'with a residual filter',
    );
  });

  it('filters by state, destination, group and fireAt range', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const evs = await insertAll(store, [
      newEvent(tenantId, 'a', { fireAt: T0 + 1 * SEC, destination: { name: 'orders' }, group: 'g1' }),
      newEvent(tenantId, 'b', { fireAt: T0 + 2 * SEC, destination: { name: 'billing' }, group: 'g2' }),
      newEvent(tenantId, 'c', { fireAt: T0 + 3 * SEC, destination: { url: 'https://example.com/orders' } }),
      newEvent(tenantId, 'd', { fireAt: T0 + 4 * SEC, destination: { name: 'orders' }, group: 'g1' }),
      newEvent(tenantId, 'e', { fireAt: T0 + 5 * SEC, destination: { name: 'orders' } }),
    ]);
    await mustClaim(store, evs[4], T0 + 6 * SEC);
    await store.eventCancel({ tenantId, id: 'b', now: T0 });
    const ids = async (p: Partial<EventListParams>) => (await listAll(store, { tenantId, limit: 2, ...p })).ids;
    assert.deepEqual(await ids({ state: 'scheduled' }), ['d', 'c', 'a']);
    assert.deepEqual(await ids({ state: 'executing' }), ['e']);
    assert.deepEqual(await ids({ state: 'succeeded' }), []);
    assert.deepEqual(await ids({ destination: 'orders' }), ['e', 'd', 'a']);
    assert.deepEqual(await ids({ group: 'g1' }), ['d', 'a']);
    assert.deepEqual(
      await ids({ fromMs: T0 + 2 * SEC, toMs: T0 + 4 * SEC }),
      ['c', 'b'],
      'from inclusive, to exclusive',
    );
    assert.deepEqual(await ids({ fromMs: T0 + 4 * SEC }), ['e', 'd']);
    assert.deepEqual(await ids({ toMs: T0 + 2 * SEC }), ['a']);
    assert.deepEqual(await ids({ state: 'scheduled', destination: 'orders', group: 'g1', fromMs: T0 + 2 * SEC }), [
      'd',
    ]);
    // A destination changed by an update is listed under its new name only.
    const moved = await store.eventUpdate({
      tenantId,
      id: 'd',
      now: T0 + 1,
      patch: { destination: { name: 'billing' } },
    });
    assert.equal(moved.kind, 'ok');
    assert.deepEqual(await ids({ destination: 'orders' }), ['e', 'a']);
    assert.deepEqual(await ids({ destination: 'billing' }), ['d', 'b']);
    assert.deepEqual(await ids({ state: 'scheduled', destination: 'billing', group: 'g1' }), ['d']);
  });

  it('examines a bounded stretch per page for a filter no index serves, and still returns every match once', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    // 2.5 walks' worth of events; the matches (by fireAt, which no index serves in list order)
    // are the oldest three and one in the middle: the newest stretch holds none.
    const n = Math.floor(LIST_EXAMINED_ROWS_MAX * 2.5);
    const match = new Set([0, 1, 2, Math.floor(n / 2)]);
    const events = Array.from({ length: n }, (_, i) =>
      newEvent(tenantId, `w${i}`, {
        fireAt: match.has(i) ? T0 : T0 + 60 * SEC,
        destination: { name: i % 2 ? 'odd' : 'even' },
      }),
    );
    for (let i = 0; i < n; i += 1_000) await insertAll(store, events.slice(i, i + 1_000));
    const expected = [...match].sort((a, b) => b - a).map((i) => `w${i}`);

    const first = await store.eventList({ tenantId, toMs: T0 + 1, limit: 10 });
    assert.deepEqual(first.events, [], 'the newest stretch holds no match');
    assert.notEqual(first.nextCursor, null, 'an empty page whose walk was cut carries a cursor');
    const { ids, pages } = await listAll(store, { tenantId, toMs: T0 + 1, limit: 10 });
    assert.deepEqual(ids, expected, 'every match once, newest first');
    assert.ok(pages.length >= 3 && pages.length <= 4, `pages: ${pages}`);
    // Two filters, one walked by its index and one checked on the rows (succeeded is a bulk state).
    const odd = (await listAll(store, { tenantId, destination: 'odd', fromMs: T0, toMs: T0 + 1, limit: 1 })).ids;
    assert.deepEqual(
      odd,
      expected.filter((id) => Number(id.slice(1)) % 2 === 1),
    );
    assert.deepEqual((await listAll(store, { tenantId, state: 'succeeded', destination: 'even', limit: 5 })).ids, []);
    // A page of everything never needs the walk's cursor: it ends where the rows end.
    const all = await listAll(store, { tenantId, limit: 1_000 }, 10);
    assert.equal(all.ids.length, n);
    assert.equal(new Set(all.ids).size, n);
  });

  it('lists one tenant only', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    await insertAll(store, [newEvent(a, 'x'), newEvent(a, 'y')]);
    await insertOne(store, newEvent(b, 'z'));
    assert.deepEqual((await listAll(store, { tenantId: a, limit: 10 })).ids, ['y', 'x']);
    assert.deepEqual((await listAll(store, { tenantId: b, limit: 1 })).ids, ['z']);
    assert.deepEqual(await store.eventList({ tenantId: await newTenant(store), limit: 10 }), {
      events: [],
      nextCursor: null,
    });
  });
}

export function transitionCases(ctx: SuiteContext): void {
  it('traces a whole life in order, numbered from 1, each step starting where the last ended', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await insertOne(store, newEvent(tenantId, 'life', { fireAt: T0 + 10 * SEC }));
    const edited = await store.eventUpdate({
      tenantId,
      id: 'life',
      now: T0 + 1 * SEC,
      patch: { fireAt: T0 + 20 * SEC },
    });
    assert.equal(edited.kind, 'ok');
    const run1 = await mustClaim(store, await mustGet(store, tenantId, 'life'), T0 + 20 * SEC + 5);
    const waiting = await mustRecord(
      store,
      outcome(run1, 'awaiting_retry', { retryAt: T0 + 30 * SEC, status: 500, error: 'HTTP 500', durationMs: 40 }),
      T0 + 21 * SEC,
    );
    const run2 = await mustClaim(store, waiting, T0 + 30 * SEC + 7);
    await mustRecord(store, outcome(run2, 'succeeded', { status: 200, durationMs: 9 }), T0 + 31 * SEC);

    const trace = await store.transitionList({ tenantId, eventId: 'life', limit: 100 });
    assert.deepEqual(
      trace.map((t) => [
        t.seq,
        t.kind,
        t.fromState,
        t.toState,
        t.attempt,
        t.status,
        t.error,
        t.durationMs,
        t.latenessMs,
        t.at,
      ]),
      [
        [1, 'created', null, 'scheduled', 0, null, null, null, null, T0],
        [2, 'updated', 'scheduled', 'scheduled', 0, null, null, null, null, T0 + 1 * SEC],
        [3, 'state', 'scheduled', 'executing', 1, null, null, null, 5, T0 + 20 * SEC + 5],
        [4, 'state', 'executing', 'awaiting_retry', 1, 500, 'HTTP 500', 40, null, T0 + 21 * SEC],
        [5, 'state', 'awaiting_retry', 'executing', 2, null, null, null, 7, T0 + 30 * SEC + 7],
        [6, 'state', 'executing', 'succeeded', 2, 200, null, 9, null, T0 + 31 * SEC],
      ],
    );
    for (const t of trace) assert.deepEqual([t.tenantId, t.eventId], [tenantId, 'life']);
    assert.equal((await mustGet(store, tenantId, 'life')).version, trace.length, 'one transition per version');
  });

  it('pages a trace longer than a page by cursor: every transition once, in order', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await insertOne(store, newEvent(tenantId, 'long', { fireAt: T0 + 1_000 * SEC }));
    const edits = 22;
    for (let k = 1; k <= edits; k++) {
      const r = await store.eventUpdate({
        tenantId,
        id: 'long',
        now: T0 + k,
        patch: { fireAt: T0 + (1_000 + k) * SEC },
      });
      assert.equal(r.kind, 'ok');
    }
    const seqs: number[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 20; i++) {
      const page = await transitionPage(store, { tenantId, eventId: 'long', limit: 5, cursor });
      seqs.push(...page.transitions.map((t) => t.seq));
      sizes.push(page.transitions.length);
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    assert.deepEqual(
      seqs,
      Array.from({ length: edits + 1 }, (_, k) => k + 1),
    );
    assert.deepEqual(sizes, [5, 5, 5, 5, 3]);
    const whole = await transitionPage(store, { tenantId, eventId: 'long', limit: edits + 1 });
    assert.equal(whole.nextCursor, null, 'a page that holds the end has no cursor');
    assert.equal(whole.transitions.length, edits + 1);
  });

  it('pages the trace by afterSeq and limit, for the owning tenant only', async () => {
    const store = ctx.store();
    const [tenantId, other] = await twoTenants(store);
    await archive(store, await insertOne(store, newEvent(tenantId, 'pg')), T0 + 10 * SEC);
    const all = await store.transitionList({ tenantId, eventId: 'pg', limit: 100 });
    assert.equal(all.length, 3);
    assert.deepEqual(await store.transitionList({ tenantId, eventId: 'pg', limit: 2 }), all.slice(0, 2));
    assert.deepEqual(await store.transitionList({ tenantId, eventId: 'pg', afterSeq: 2, limit: 2 }), all.slice(2));
    assert.deepEqual(await store.transitionList({ tenantId, eventId: 'pg', afterSeq: 3, limit: 2 }), []);
    assert.deepEqual(await store.transitionList({ tenantId: other, eventId: 'pg', limit: 100 }), []);
  });
}

export function countDurabilityCases(ctx: SuiteContext): void {
  it('counts events per (tenant, state)', async () => {
    await withFreshStore(ctx.make, async (store) => {
      assert.deepEqual(await store.eventCountByTenantState(), []);
      const [a, b] = await twoTenants(store);
      const evs = await insertAll(
        store,
        ['s1', 's2', 'x', 'r', 'ok', 'ar', 'di', 'ca'].map((id, i) => newEvent(i % 2 ? a : b, id)),
      );
      const get = (id: string) => evs.find((e) => e.id === id) as EventRecord;
      await mustClaim(store, get('x'), T0 + 10 * SEC);
      const r = await mustClaim(store, get('r'), T0 + 10 * SEC);
      await mustRecord(store, outcome(r, 'awaiting_retry', { retryAt: T0 + 99 * SEC }), T0 + 11 * SEC);
      await mustRecord(store, outcome(await mustClaim(store, get('ok'), T0 + 10 * SEC), 'succeeded'), T0 + 11 * SEC);
      await archive(store, get('ar'), T0 + 10 * SEC);
      await archive(store, get('di'), T0 + 10 * SEC, 'discarded');
      await store.eventCancel({ tenantId: get('ca').tenantId, id: 'ca', now: T0 });
      const expected: Record<EventState, number> = {
        scheduled: 2,
        executing: 1,
        awaiting_retry: 1,
        succeeded: 1,
        discarded: 1,
        archived: 1,
        canceled: 1,
      };
      assert.deepEqual(await countByState(store), expected);
      const byTenant = (await store.eventCountByTenantState()).map((r) => `${r.tenantId}:${r.state}=${r.n}`).sort();
      const perTenant = [
        ...['scheduled', 'awaiting_retry', 'archived', 'canceled'].map((s) => `${a}:${s}=1`),
        ...['scheduled', 'executing', 'succeeded', 'discarded'].map((s) => `${b}:${s}=1`),
      ];
      assert.deepEqual(byTenant, perTenant.sort(), 'every (tenant, state) that has events, and no other');
    });
  });

  it('keeps everything across close and reopen', async (t) => {
    const h = await ctx.make();
    try {
      if (!h.reopen) {
        t.skip('the backend gave no reopen(): it cannot show its data outliving a close');
        return;
      }
      const store = h.store;
      const tenantId = await newTenant(store);
      await store.apiKeyCreate({ id: 'k1', tenantId, hash: 'sha-k1', prefix: 'bk_k1', createdAt: T0, revokedAt: null });
      const evs = await insertAll(store, [
        newEvent(tenantId, 'd1', { group: 'g' }),
        newEvent(tenantId, 'd2', { group: 'g' }),
      ]);
      const running = await mustClaim(store, evs[0], T0 + 10 * SEC);
      const before = {
        tenant: await store.tenantGet({ id: tenantId }),
        key: await store.apiKeyFindByHash({ hash: 'sha-k1' }),
        events: await store.eventList({ tenantId, limit: 10 }),
        trace: await store.transitionList({ tenantId, eventId: 'd1', limit: 10 }),
      };
      await store.close();

      const reopened = await h.reopen();
      try {
        assert.deepEqual(
          {
            tenant: await reopened.tenantGet({ id: tenantId }),
            key: await reopened.apiKeyFindByHash({ hash: 'sha-k1' }),
            events: await reopened.eventList({ tenantId, limit: 10 }),
            trace: await reopened.transitionList({ tenantId, eventId: 'd1', limit: 10 }),
          },
          before,
        );
        const later = await insertOne(reopened, newEvent(tenantId, 'd3'), T0 + 20 * SEC);
        assert.ok(later.seq > Math.max(...evs.map((e) => e.seq)), 'seq keeps growing after a reopen');
        assert.equal(await claimAfterReopen(reopened, running), true);
      } finally {
        await reopened.close();
      }
    } finally {
      await h.cleanup();
    }
  });
}

/** The claim made before the close still holds: its owner can record the outcome. */
async function claimAfterReopen(store: Store, running: EventRecord): Promise<boolean> {
  const [applied] = await store.eventRecordAttempts({
    outcomes: [outcome(running, 'succeeded', { status: 200 })],
    now: T0 + 21 * SEC,
  });
  return applied;
}
