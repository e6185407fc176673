/** Conformance: group order (head by (fireAt, seq)) and the due list of the read-ahead. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { EVENT_LIST_DUE_SKIP_MAX, type DueRef, type NewEvent, type Store } from '../store.ts';
import {
  claimOne,
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
  uniqueShard,
  withFreshStore,
  type SuiteContext,
} from './fixtures.ts';

const FAR = T0 + 3_600 * SEC;

/** Ids listed due in `shard` by `untilMs`, in order. */
async function dueIds(store: Store, shard: number, untilMs = FAR): Promise<string[]> {
  const refs = await store.eventListDue({ shards: [shard], after: null, untilMs, limit: 100 });
  return refs.map((r) => r.id);
}

export function groupCases(ctx: SuiteContext): void {
  it('fires a group in (fireAt, seq) order, one event at a time', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const shard = uniqueShard();
    const g = { group: 'g1', shard };
    // Inserted out of fire order: the head is the earliest fireAt, not the first inserted.
    const [late, early] = await insertAll(store, [
      newEvent(tenantId, 'late', { ...g, fireAt: T0 + 20 * SEC }),
      newEvent(tenantId, 'early', { ...g, fireAt: T0 + 10 * SEC }),
    ]);
    const head = await store.eventGroupHead({ tenantId, group: 'g1' });
    assert.deepEqual(await store.eventGroupHead({ tenantId, group: 'g1', shard }), head, 'the same head by its shard');
    assert.deepEqual(head, {
      tenantId,
      id: 'early',
      version: 1,
      dueAt: T0 + 10 * SEC,
      shard,
      group: 'g1',
      queue: 'name:orders',
    } satisfies DueRef);
    assert.deepEqual(await dueIds(store, shard), ['early'], 'a non-head member is not listed');

    assert.equal(await claimOne(store, late, T0 + 30 * SEC), null, 'claim refuses a non-head');
    const running = await mustClaim(store, early, T0 + 30 * SEC);
    assert.equal(await store.eventGroupHead({ tenantId, group: 'g1' }), null, 'head executing: nothing may fire');
    assert.equal(await store.eventGroupHead({ tenantId, group: 'g1', shard }), null);
    assert.deepEqual(await dueIds(store, shard), []);
    assert.equal(await claimOne(store, late, T0 + 30 * SEC), null);

    await mustRecord(store, outcome(running, 'succeeded', { status: 200 }), T0 + 31 * SEC);
    assert.equal((await store.eventGroupHead({ tenantId, group: 'g1' }))?.id, 'late');
    assert.equal((await store.eventGroupHead({ tenantId, group: 'g1', shard }))?.id, 'late');
    assert.deepEqual(await dueIds(store, shard), ['late']);
    await mustClaim(store, late, T0 + 32 * SEC);
  });

  it('breaks fireAt ties by creation order, not by id', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const shard = uniqueShard();
    const same = { group: 'tie', shard, fireAt: T0 + 5 * SEC };
    const [b, a] = await insertAll(store, [newEvent(tenantId, 'b', same), newEvent(tenantId, 'a', same)]);
    assert.equal((await store.eventGroupHead({ tenantId, group: 'tie' }))?.id, 'b');
    assert.deepEqual(await dueIds(store, shard), ['b']);
    assert.equal(await claimOne(store, a, T0 + 6 * SEC), null);
    await mustClaim(store, b, T0 + 6 * SEC);
  });

  it('claims only the head when a batch holds the whole group, in any order', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const evs = await insertAll(
      store,
      [1, 2, 3].map((i) => newEvent(tenantId, `m${i}`, { group: 'batch', fireAt: T0 + i * SEC })),
    );
    const now = T0 + 10 * SEC;
    const out = await store.eventClaim({
      refs: [...evs].reverse().map((e) => ({ tenantId, id: e.id, version: e.version })),
      now,
      owner: 'node-a',
      leaseUntil: now + SEC,
    });
    assert.deepEqual(
      out.map((e) => e.id),
      ['m1'],
    );
    const out2 = await store.eventClaim({
      refs: evs.map((e) => ({ tenantId, id: e.id, version: e.version })),
      now,
      owner: 'node-a',
      leaseUntil: now + SEC,
    });
    assert.deepEqual(out2, [], 'm1 is executing now, so m2 and m3 wait');
  });

  it('lets a canceled head go, while an awaiting_retry head keeps its place', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const shard = uniqueShard();
    const evs = await insertAll(
      store,
      [1, 2, 3].map((i) => newEvent(tenantId, `k${i}`, { group: 'g', shard, fireAt: T0 + i * SEC })),
    );
    assert.equal((await store.eventCancel({ tenantId, id: 'k1', now: T0 })).kind, 'ok');
    assert.equal((await store.eventGroupHead({ tenantId, group: 'g' }))?.id, 'k2');

    const running = await mustClaim(store, evs[1], T0 + 5 * SEC);
    const retryAt = T0 + 60 * SEC;
    const waiting = await mustRecord(store, outcome(running, 'awaiting_retry', { retryAt, status: 503 }), T0 + 6 * SEC);
    assert.deepEqual(await store.eventGroupHead({ tenantId, group: 'g' }), {
      tenantId,
      id: 'k2',
      version: waiting.version,
      dueAt: retryAt,
      shard,
      group: 'g',
      queue: 'name:orders',
    });
    assert.deepEqual(await dueIds(store, shard, T0 + 30 * SEC), [], 'k3 is due but waits behind k2');
    assert.deepEqual(await dueIds(store, shard, retryAt), ['k2']);
    assert.equal(await claimOne(store, evs[2], T0 + 30 * SEC), null);
  });

  it('holds an event created ahead of the executing member until that member is terminal', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const shard = uniqueShard();
    const head = await insertOne(store, newEvent(tenantId, 'head', { group: 'ahead', shard, fireAt: T0 + 10 * SEC }));
    const running = await mustClaim(store, head, T0 + 10 * SEC);
    // Created with a fireAt in the past: first by (fireAt, seq), but the group is busy.
    const early = await insertOne(
      store,
      newEvent(tenantId, 'early', { group: 'ahead', shard, fireAt: T0 }),
      T0 + 11 * SEC,
    );
    assert.equal(
      await store.eventGroupHead({ tenantId, group: 'ahead' }),
      null,
      'a member executing: nothing may fire',
    );
    assert.deepEqual(await dueIds(store, shard), [], 'the new member is not listed due while the head executes');
    assert.equal(await claimOne(store, early, T0 + 12 * SEC), null, 'claim refuses it while the head executes');
    await mustRecord(store, outcome(running, 'succeeded', { status: 200 }), T0 + 13 * SEC);
    assert.equal((await store.eventGroupHead({ tenantId, group: 'ahead' }))?.id, 'early');
    await mustClaim(store, early, T0 + 14 * SEC);
  });

  it('holds a member an edit moves ahead of the executing member', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const shard = uniqueShard();
    const [first] = await insertAll(store, [
      newEvent(tenantId, 'first', { group: 'edit', shard, fireAt: T0 + 10 * SEC }),
      newEvent(tenantId, 'second', { group: 'edit', shard, fireAt: T0 + 20 * SEC }),
    ]);
    const running = await mustClaim(store, first, T0 + 10 * SEC);
    const moved = await store.eventUpdate({ tenantId, id: 'second', now: T0 + 11 * SEC, patch: { fireAt: T0 } });
    assert.equal(moved.kind, 'ok');
    if (moved.kind !== 'ok') return;
    assert.equal(await store.eventGroupHead({ tenantId, group: 'edit' }), null);
    assert.deepEqual(await dueIds(store, shard), []);
    assert.equal(await claimOne(store, moved.event, T0 + 12 * SEC), null);
    await mustRecord(store, outcome(running, 'discarded', { status: 400 }), T0 + 13 * SEC);
    await mustClaim(store, moved.event, T0 + 14 * SEC);
  });

  it('keeps a started member awaiting retry as the head when an earlier member arrives', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const shard = uniqueShard();
    const started = await insertOne(
      store,
      newEvent(tenantId, 'started', { group: 'retry', shard, fireAt: T0 + 10 * SEC }),
    );
    const running = await mustClaim(store, started, T0 + 10 * SEC);
    const retryAt = T0 + 60 * SEC;
    const waiting = await mustRecord(
      store,
      outcome(running, 'awaiting_retry', { retryAt, status: 503 }),
      T0 + 11 * SEC,
    );
    const early = await insertOne(
      store,
      newEvent(tenantId, 'early', { group: 'retry', shard, fireAt: T0 }),
      T0 + 12 * SEC,
    );
    assert.equal(
      (await store.eventGroupHead({ tenantId, group: 'retry' }))?.id,
      'started',
      'the started member keeps the group',
    );
    assert.deepEqual(await dueIds(store, shard, T0 + 30 * SEC), [], 'the earlier member waits behind the retry');
    assert.deepEqual(await dueIds(store, shard, retryAt), ['started']);
    assert.equal(await claimOne(store, early, T0 + 30 * SEC), null);
    const again = await mustClaim(store, waiting, retryAt);
    await mustRecord(store, outcome(again, 'succeeded', { status: 200 }), retryAt + SEC);
    assert.equal((await store.eventGroupHead({ tenantId, group: 'retry' }))?.id, 'early');
  });

  it('keeps groups apart per tenant; an empty group has no head', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const ea = await insertOne(store, newEvent(a, 'x', { group: 'shared', fireAt: T0 + SEC }));
    await mustClaim(store, ea, T0 + 2 * SEC);
    const eb = await insertOne(store, newEvent(b, 'y', { group: 'shared', fireAt: T0 + 5 * SEC }));
    assert.equal(
      (await store.eventGroupHead({ tenantId: b, group: 'shared' }))?.id,
      'y',
      'a’s running event does not block b',
    );
    await mustClaim(store, eb, T0 + 6 * SEC);
    assert.equal(await store.eventGroupHead({ tenantId: a, group: 'nobody' }), null);
  });

  it('reorders the group when an update moves fireAt', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await insertAll(store, [
      newEvent(tenantId, 'p', { group: 'move', fireAt: T0 + 10 * SEC }),
      newEvent(tenantId, 'q', { group: 'move', fireAt: T0 + 20 * SEC }),
    ]);
    const moved = await store.eventUpdate({ tenantId, id: 'p', now: T0, patch: { fireAt: T0 + 30 * SEC } });
    assert.equal(moved.kind, 'ok');
    assert.equal((await store.eventGroupHead({ tenantId, group: 'move' }))?.id, 'q');
  });
}

export function dueListCases(ctx: SuiteContext): void {
  it('lists fireable events due by untilMs in (dueAt, tenantId, id) order', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const shard = uniqueShard();
    const at = (s: number) => ({ shard, fireAt: T0 + s * SEC });
    await insertAll(store, [
      newEvent(b, 'b1', at(5)),
      newEvent(a, 'a2', at(5)),
      newEvent(a, 'a1', at(5)),
      newEvent(a, 'a0', at(3)),
    ]);
    await insertAll(store, [newEvent(b, 'b9', at(9)), newEvent(a, 'later', at(11))]);
    const busy = await insertOne(store, newEvent(a, 'busy', at(1)));
    await mustClaim(store, busy, T0 + 2 * SEC);
    await insertOne(store, newEvent(a, 'gone', at(1)));
    await store.eventCancel({ tenantId: a, id: 'gone', now: T0 });

    const refs = await store.eventListDue({ shards: [shard], after: null, untilMs: T0 + 9 * SEC, limit: 100 });
    assert.deepEqual(
      refs.map((r) => `${r.tenantId === a ? 'A' : 'B'}/${r.id}`),
      ['A/a0', 'A/a1', 'A/a2', 'B/b1', 'B/b9'],
    );
    assert.deepEqual(refs[0], {
      tenantId: a,
      id: 'a0',
      version: 1,
      dueAt: T0 + 3 * SEC,
      shard,
      group: null,
      queue: 'name:orders',
    });
  });

  it('pages by keyset without losing or repeating a row', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const shard = uniqueShard();
    const events = [];
    for (let i = 0; i < 7; i++) events.push(newEvent(i % 2 ? a : b, `p${i}`, { shard, fireAt: T0 + (i % 3) * SEC }));
    await insertAll(store, events);
    const seen: string[] = [];
    let after: { dueAt: number; tenantId: string; id: string } | null = null;
    for (let page = 0; page < 10; page++) {
      const refs: DueRef[] = await store.eventListDue({ shards: [shard], after, untilMs: FAR, limit: 3 });
      seen.push(...refs.map((r) => `${r.tenantId}/${r.id}`));
      if (refs.length < 3) break;
      const last = refs[refs.length - 1];
      after = { dueAt: last.dueAt, tenantId: last.tenantId, id: last.id };
    }
    const all = (await store.eventListDue({ shards: [shard], after: null, untilMs: FAR, limit: 100 })).map(
      (r) => `${r.tenantId}/${r.id}`,
    );
    assert.equal(all.length, 7);
    assert.deepEqual(seen, all);
  });

  it('filters by shard', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const [s1, s2, s3] = [uniqueShard(), uniqueShard(), uniqueShard()];
    await insertAll(store, [
      newEvent(tenantId, 'in1', { shard: s1 }),
      newEvent(tenantId, 'in2', { shard: s2 }),
      newEvent(tenantId, 'out', { shard: s3 }),
    ]);
    const refs = await store.eventListDue({ shards: [s1, s2], after: null, untilMs: FAR, limit: 100 });
    assert.deepEqual(refs.map((r) => r.id).sort(), ['in1', 'in2']);
    assert.deepEqual(await store.eventListDue({ shards: [], after: null, untilMs: FAR, limit: 100 }), []);
  });

  it('lists every shard when shards is null, and stops at limit', async () => {
    await withFreshStore(ctx.make, async (store) => {
      const tenantId = await newTenant(store);
      await insertAll(
        store,
        [0, 7, 255].map((shard) => newEvent(tenantId, `s${shard}`, { shard, fireAt: T0 + shard })),
      );
      await insertAll(store, [
        newEvent(tenantId, 'g-second', { shard: 9, group: 'g', fireAt: T0 + 2 }),
        newEvent(tenantId, 'g-first', { shard: 9, group: 'g', fireAt: T0 + 1 }),
      ]);
      const refs = await store.eventListDue({ shards: null, after: null, untilMs: FAR, limit: 100 });
      assert.deepEqual(
        refs.map((r) => r.id),
        ['s0', 'g-first', 's7', 's255'],
        'group heads only',
      );
      const two = await store.eventListDue({ shards: null, after: null, untilMs: FAR, limit: 2 });
      assert.deepEqual(
        two.map((r) => r.id),
        ['s0', 'g-first'],
      );
    });
  });

  it('lists an awaiting_retry event at its retry time, not before', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const shard = uniqueShard();
    const e = await insertOne(store, newEvent(tenantId, 'r', { shard, fireAt: T0 + SEC }));
    const running = await mustClaim(store, e, T0 + SEC);
    await mustRecord(store, outcome(running, 'awaiting_retry', { retryAt: T0 + 40 * SEC }), T0 + 2 * SEC);
    assert.deepEqual(await dueIds(store, shard, T0 + 40 * SEC - 1), []);
    const refs = await store.eventListDue({ shards: [shard], after: null, untilMs: T0 + 40 * SEC, limit: 10 });
    assert.deepEqual(
      refs.map((r) => [r.id, r.dueAt, r.version]),
      [['r', T0 + 40 * SEC, (await mustGet(store, tenantId, 'r')).version]],
    );
  });

  it('lists one queue from an inclusive start: its own rows only, in (dueAt, id) order, group heads, owned shards', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const [s1, s2] = [uniqueShard(), uniqueShard()];
    const at = (sec: number, o: Partial<NewEvent> = {}) => ({
      shard: s1,
      fireAt: T0 + sec * SEC,
      destination: { name: 'slow' },
      ...o,
    });
    await insertAll(store, [
      newEvent(a, 'q3', at(3)),
      newEvent(a, 'q1', at(1)),
      newEvent(a, 'q2b', at(2)),
      newEvent(a, 'q2a', at(2)),
      newEvent(a, 'other-dest', at(1, { destination: { name: 'fast' } })),
      newEvent(b, 'other-tenant', at(1)),
      newEvent(a, 'other-shard', at(1, { shard: s2 })),
      newEvent(a, 'g-first', at(4, { group: 'g' })),
      newEvent(a, 'g-second', at(4, { group: 'g' })),
      newEvent(a, 'inline', at(1, { destination: { url: 'https://Hooks.Example.com:443/a?b=1' } })),
    ]);
    const list = async (
      from: { dueAt: number; id: string } | null,
      o: { limit?: number; shards?: number[] | null; queue?: string } = {},
    ) =>
      (
        await store.eventListDue({
          shards: o.shards === undefined ? [s1] : o.shards,
          after: null,
          untilMs: FAR,
          limit: o.limit ?? 100,
          queue: { tenantId: a, queue: o.queue ?? 'name:slow', from },
        })
      ).map((r) => r.id);
    assert.deepEqual(await list(null), ['q1', 'q2a', 'q2b', 'q3', 'g-first']);
    assert.deepEqual(
      await list({ dueAt: T0 + 2 * SEC, id: 'q2b' }),
      ['q2b', 'q3', 'g-first'],
      'the start is inclusive',
    );
    assert.deepEqual(await list(null, { limit: 2 }), ['q1', 'q2a']);
    assert.deepEqual((await list(null, { shards: null })).sort(), ['g-first', 'other-shard', 'q1', 'q2a', 'q2b', 'q3']);
    assert.deepEqual(
      await list(null, { queue: 'url:https://hooks.example.com' }),
      ['inline'],
      'an inline URL queues by its origin',
    );
    const refs = await store.eventListDue({
      shards: [s1],
      after: null,
      untilMs: T0 + SEC,
      limit: 10,
      queue: { tenantId: a, queue: 'name:slow', from: null },
    });
    assert.deepEqual(
      refs,
      [{ tenantId: a, id: 'q1', version: 1, dueAt: T0 + SEC, shard: s1, group: null, queue: 'name:slow' }],
      'bounded by untilMs',
    );
  });
  it('leaves out the rows of skipped queues from their start on, and pages past them to an empty page', async () => {
    await withFreshStore(ctx.make, async (store) => {
      const [a, b] = await twoTenants(store);
      const [s1, s2] = [uniqueShard(), uniqueShard()];
      const at = (sec: number, o: Partial<NewEvent> = {}) => ({
        shard: s1,
        fireAt: T0 + sec * SEC,
        destination: { name: 'flood' },
        ...o,
      });
      const events: NewEvent[] = [];
      for (let i = 0; i < 7; i++) events.push(newEvent(a, `f${i}`, at(i)));
      events.push(
        newEvent(a, 'quiet', at(2, { destination: { name: 'quiet' } })),
        newEvent(a, 'quiet2', at(5, { destination: { name: 'quiet' }, shard: s2 })),
      );
      events.push(newEvent(b, 'other-tenant', at(3.5)));
      await insertAll(store, events);
      // In order: f0 f1 f2 quiet f3 other-tenant f4 f5 quiet2 f6; the flood is skipped from f2 on.
      const flood = { tenantId: a, queue: 'name:flood', from: { dueAt: T0 + 2 * SEC, id: 'f2' } };
      const ids = async (
        o: { shards?: number[] | null; limit?: number; after?: DueRef | null; skip?: (typeof flood)[] } = {},
      ) => {
        const after = o.after ? { dueAt: o.after.dueAt, tenantId: o.after.tenantId, id: o.after.id } : null;
        return store.eventListDue({
          shards: o.shards === undefined ? [s1, s2] : o.shards,
          after,
          untilMs: FAR,
          limit: o.limit ?? 100,
          skip: o.skip ?? [flood],
        });
      };
      // One page of 100: everything due was examined; a store may add f6, the last row examined.
      const all = ['f0', 'f1', 'quiet', 'other-tenant', 'quiet2'];
      const notF6 = (r: DueRef) => r.id !== 'f6';
      assert.deepEqual(
        (await ids()).filter(notF6).map((r) => r.id),
        all,
        'rows before the start stay, other queues and tenants too',
      );
      assert.deepEqual(
        (await ids({ shards: null })).filter(notF6).map((r) => r.id),
        all,
        'all shards',
      );
      assert.equal((await ids({ skip: [] })).length, 10, 'an empty skip leaves nothing out');
      // Pages of 2: the rows not skipped, in order; a skipped row only as the last of a page (where
      // the next page starts); an empty page at the end.
      const kept: string[] = [];
      let after: DueRef | null = null;
      let pages = 0;
      for (; pages < 20; pages++) {
        const page: DueRef[] = await ids({ limit: 2, after });
        if (page.length === 0) break;
        assert.ok(page.length <= 2);
        const isSkipped = (r: DueRef) => r.queue === 'name:flood' && r.tenantId === a && r.dueAt >= T0 + 2 * SEC;
        assert.ok(
          page.slice(0, -1).every((r) => !isSkipped(r)),
          `only the last row of a page may be a skipped one: ${page.map((r) => r.id)}`,
        );
        kept.push(...page.filter((r) => !isSkipped(r)).map((r) => r.id));
        after = page[page.length - 1];
      }
      assert.ok(pages < 20, 'the pages end with an empty one');
      assert.deepEqual(kept, ['f0', 'f1', 'quiet', 'other-tenant', 'quiet2']);
      await assert.rejects(
        store.eventListDue({
          shards: null,
          after: null,
          untilMs: FAR,
          limit: 10,
          skip: Array.from({ length: EVENT_LIST_DUE_SKIP_MAX + 1 }, () => flood),
        }),
        RangeError,
      );
    });
  });
}
