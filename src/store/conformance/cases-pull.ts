/** Conformance: pull delivery (claim, ack / nack / expiry, extend, receipts, group order, kept from the scheduler). */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { EventRecord } from '../../core/event.ts';
import type { Store } from '../store.ts';
import {
  insertAll,
  mustGet,
  newEvent,
  newTenant,
  pullClaimParams,
  pullDestination,
  SEC,
  T0,
  uniqueShard,
  type SuiteContext,
} from './fixtures.ts';

const QUEUE = 'name:jobs';

const ids = (events: EventRecord[]) => events.map((e) => e.id);

/** A new tenant whose pull destination `jobs` holds g1 then g2 (group g) and solo, due at T0 + 1, 2 and 3 s. */
async function groupAndSolo(store: Store): Promise<{ store: Store; tenantId: string }> {
  const tenantId = await newTenant(store);
  await pullDestination(store, tenantId);
  await insertAll(store, [
    newEvent(tenantId, 'g1', { destination: { name: 'jobs' }, group: 'g', fireAt: T0 + 1 * SEC }),
    newEvent(tenantId, 'g2', { destination: { name: 'jobs' }, group: 'g', fireAt: T0 + 2 * SEC }),
    newEvent(tenantId, 'solo', { destination: { name: 'jobs' }, fireAt: T0 + 3 * SEC }),
  ]);
  return { store, tenantId };
}

export function pullCases(ctx: SuiteContext): void {
  it('keeps pull events from the scheduler (list due, claim, group head) and hands them to pull claims', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await pullDestination(store, tenantId);
    const shard = uniqueShard();
    const [pulled, pushed] = await insertAll(store, [
      newEvent(tenantId, 'p1', { shard, destination: { name: 'jobs' }, group: 'g' }),
      newEvent(tenantId, 'h1', { shard, destination: { name: 'orders' } }),
    ]);
    const due = await store.eventListDue({ shards: [shard], after: null, untilMs: T0 + 60 * SEC, limit: 10 });
    assert.deepEqual(
      due.map((r) => r.id),
      ['h1'],
      'the read-ahead lists only the pushed event',
    );
    assert.deepEqual(
      await store.eventClaim({ refs: [pulled], now: T0 + 20 * SEC, owner: 'n1', leaseUntil: T0 + 60 * SEC }),
      [],
    );
    assert.equal(await store.eventGroupHead({ tenantId, group: 'g' }), null, "a pull head is not the scheduler's");
    const lag = await store.shardLag({ now: T0 + 60 * SEC, limit: 10_000 });
    assert.equal(lag.find((l) => l.shard === shard)?.dueEvents, 1, 'shard lag counts the pushed event only');
    assert.equal(
      (await store.eventPullClaim(pullClaimParams(tenantId, { queue: 'name:orders' }))).length,
      0,
      'a push event is never pulled',
    );
    const claimed = await store.eventPullClaim(pullClaimParams(tenantId, { receipt: 'rc-1' }));
    assert.deepEqual(ids(claimed), ['p1']);
    assert.equal(claimed[0].state, 'executing');
    assert.equal(claimed[0].attempts, 1);
    assert.equal(claimed[0].leaseUntil, T0 + 50 * SEC);
    assert.equal(pushed.state, 'scheduled');
  });

  it('claims due events in due order, at most max, none early, each once', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await pullDestination(store, tenantId);
    await insertAll(store, [
      newEvent(tenantId, 'c', { destination: { name: 'jobs' }, fireAt: T0 + 3 * SEC }),
      newEvent(tenantId, 'a', { destination: { name: 'jobs' }, fireAt: T0 + 1 * SEC }),
      newEvent(tenantId, 'b', { destination: { name: 'jobs' }, fireAt: T0 + 2 * SEC }),
      newEvent(tenantId, 'late', { destination: { name: 'jobs' }, fireAt: T0 + 100 * SEC }),
    ]);
    const first = await store.eventPullClaim(pullClaimParams(tenantId, { max: 2 }));
    assert.deepEqual(ids(first), ['a', 'b']);
    const second = await store.eventPullClaim(pullClaimParams(tenantId, { max: 10 }));
    assert.deepEqual(ids(second), ['c'], 'claimed events are not handed out again; the late one is not due');
    assert.deepEqual(await store.eventPullClaim(pullClaimParams(tenantId)), []);
    assert.equal(await store.eventPullNextDue({ tenantId, queue: QUEUE }), T0 + 100 * SEC);
    const trace = await store.transitionList({ tenantId, eventId: 'a', limit: 10 });
    assert.deepEqual(
      trace.map((t) => [t.fromState, t.toState]),
      [
        [null, 'scheduled'],
        ['scheduled', 'executing'],
      ],
    );
    assert.equal(trace[1].detail?.pull, 'claim');
    assert.equal(trace[1].latenessMs, 19 * SEC);
  });

  it('filters by type; an untyped claim takes every type', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await pullDestination(store, tenantId);
    await insertAll(store, [
      newEvent(tenantId, 'x1', { destination: { name: 'jobs' }, type: 'order.timeout', fireAt: T0 + 2 * SEC }),
      newEvent(tenantId, 'y1', { destination: { name: 'jobs' }, type: 'invoice.due', fireAt: T0 + 1 * SEC }),
      newEvent(tenantId, 'z1', { destination: { name: 'jobs' }, type: 'other', fireAt: T0 + 3 * SEC }),
      newEvent(tenantId, 'n1', { destination: { name: 'jobs' }, fireAt: T0 + 4 * SEC }),
    ]);
    const typed = await store.eventPullClaim(pullClaimParams(tenantId, { types: ['order.timeout', 'invoice.due'] }));
    assert.deepEqual(ids(typed), ['y1', 'x1'], 'both types, merged in due order');
    assert.deepEqual(ids(await store.eventPullClaim(pullClaimParams(tenantId))), ['z1', 'n1']);
  });

  it('acks, nacks and expires only under the current receipt; stale, foreign and repeated receipts change nothing', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const other = await newTenant(store);
    await pullDestination(store, tenantId);
    await insertAll(store, [newEvent(tenantId, 'e', { destination: { name: 'jobs' } })]);
    const now = T0 + 20 * SEC;
    const [c1] = await store.eventPullClaim(pullClaimParams(tenantId, { receipt: 'first' }));
    const settle = (o: {
      tenantId?: string;
      receipt: string;
      to: 'succeeded' | 'awaiting_retry';
      at: number;
      attempts?: number | null;
      retryAt?: number;
    }) =>
      store.eventPullSettle({
        tenantId: o.tenantId ?? tenantId,
        id: 'e',
        receipt: o.receipt,
        attempts: o.attempts ?? null,
        action: o.to === 'succeeded' ? 'ack' : 'nack',
        to: o.to,
        retryAt: o.retryAt,
        now: o.at,
      });
    assert.equal(await settle({ receipt: 'nope', to: 'succeeded', at: now }), null, 'a wrong receipt');
    assert.equal(await settle({ tenantId: other, receipt: 'first', to: 'succeeded', at: now }), null, 'another tenant');
    assert.equal(await settle({ receipt: 'first', to: 'succeeded', at: now, attempts: 7 }), null, 'another attempt');
    const nacked = await settle({
      receipt: 'first',
      to: 'awaiting_retry',
      at: now + 1,
      attempts: c1.attempts,
      retryAt: now + 5 * SEC,
    });
    assert.equal(nacked?.state, 'awaiting_retry');
    assert.equal(nacked?.dueAt, now + 5 * SEC);
    assert.deepEqual(
      await store.eventPullClaim(pullClaimParams(tenantId, { now: now + 4 * SEC })),
      [],
      'not claimable before its retry',
    );
    const [c2] = await store.eventPullClaim(
      pullClaimParams(tenantId, { now: now + 5 * SEC, receipt: 'second', leaseUntil: now + 60 * SEC }),
    );
    assert.equal(c2.attempts, 2);
    assert.equal(
      await settle({ receipt: 'first', to: 'succeeded', at: now + 6 * SEC }),
      null,
      "the older claim's receipt",
    );
    assert.equal(
      await store.eventPullExtend({
        tenantId,
        id: 'e',
        receipt: 'first',
        now: now + 6 * SEC,
        leaseUntil: now + 90 * SEC,
      }),
      null,
    );
    const acked = await settle({ receipt: 'second', to: 'succeeded', at: now + 7 * SEC });
    assert.equal(acked?.state, 'succeeded');
    assert.equal(acked?.leaseOwner, null);
    assert.equal(await settle({ receipt: 'second', to: 'succeeded', at: now + 8 * SEC }), null, 'already acked');
    const stored = await mustGet(store, tenantId, 'e');
    assert.equal(stored.state, 'succeeded');
    assert.equal(stored.version, acked!.version);
    const trace = await store.transitionList({ tenantId, eventId: 'e', limit: 20 });
    assert.deepEqual(
      trace.map((t) => t.detail?.pull ?? t.kind),
      ['created', 'claim', 'nack', 'claim', 'ack'],
    );
  });

  it('settles many claims in one call, each by its own receipt; those that do not hold change nothing', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await pullDestination(store, tenantId);
    await insertAll(
      store,
      ['a', 'b', 'c', 'd'].map((id) => newEvent(tenantId, id, { destination: { name: 'jobs' } })),
    );
    const now = T0 + 20 * SEC;
    const claimed = await store.eventPullClaim(pullClaimParams(tenantId, { receipt: 'r1' }));
    assert.deepEqual(ids(claimed).sort(), ['a', 'b', 'c', 'd']);
    const base = { tenantId, receipt: 'r1', attempts: 1, now: now + 1 };
    const settled = await store.eventPullSettleMany({
      settles: [
        { ...base, id: 'c', receipt: 'stale', action: 'ack', to: 'succeeded' },
        { ...base, id: 'a', action: 'ack', to: 'succeeded' },
        { ...base, id: 'b', action: 'nack', to: 'awaiting_retry', retryAt: now + 9 * SEC, error: 'busy' },
        { ...base, id: 'd', action: 'nack', to: 'discarded', error: 'not mine' },
        { ...base, id: 'missing', action: 'ack', to: 'succeeded' },
      ],
    });
    assert.deepEqual(
      settled.map((e) => e && [e.id, e.state]),
      [null, ['a', 'succeeded'], ['b', 'awaiting_retry'], ['d', 'discarded'], null],
      'the answers in the order given; null where the receipt does not hold',
    );
    assert.equal(settled[2]?.dueAt, now + 9 * SEC);
    assert.equal(settled[2]?.lastError, 'busy');
    assert.equal((await mustGet(store, tenantId, 'c')).state, 'executing', 'a stale receipt changes nothing');
    for (const [id, last] of [
      ['a', 'ack'],
      ['b', 'nack'],
      ['d', 'nack'],
    ] as const) {
      const stored = await mustGet(store, tenantId, id);
      assert.equal(stored.leaseOwner, null);
      const trace = await store.transitionList({ tenantId, eventId: id, limit: 20 });
      assert.deepEqual(
        trace.map((t) => t.detail?.pull ?? t.kind),
        ['created', 'claim', last],
        `${id}'s trace`,
      );
      assert.equal(trace.at(-1)?.at, now + 1);
      assert.equal(trace.at(-1)?.toState, stored.state);
    }
    // Settled again: nothing holds any more.
    assert.deepEqual(
      await store.eventPullSettleMany({ settles: [{ ...base, id: 'a', action: 'ack', to: 'succeeded' }] }),
      [null],
    );
    await assert.rejects(
      store.eventPullSettleMany({
        settles: [
          { ...base, id: 'c', action: 'ack', to: 'succeeded' },
          { ...base, id: 'c', action: 'ack', to: 'succeeded' },
        ],
      }),
      RangeError,
      'one event named twice',
    );
    await assert.rejects(store.eventPullSettleMany({ settles: [] }), RangeError);
    assert.equal((await mustGet(store, tenantId, 'c')).state, 'executing', 'a refused batch changes nothing');
  });

  it('settles, then claims, in one call: an ack that ends a group head lets the same call claim its next member', async () => {
    const { store, tenantId } = await groupAndSolo(ctx.store());
    assert.deepEqual(ids(await store.eventPullClaim(pullClaimParams(tenantId, { receipt: 'r1' }))), ['g1', 'solo']);
    const now = T0 + 30 * SEC;
    const ack = { tenantId, attempts: null, action: 'ack', to: 'succeeded', now } as const;
    const { settled, events } = await store.eventPullSettleThenClaim({
      settles: [
        { ...ack, id: 'solo', receipt: 'stale' },
        { ...ack, id: 'g1', receipt: 'r1' },
      ],
      claim: pullClaimParams(tenantId, { now, receipt: 'r2' }),
    });
    assert.deepEqual(
      settled.map((e) => e && [e.id, e.state]),
      [null, ['g1', 'succeeded']],
      "the settles' answers, as eventPullSettleMany's",
    );
    assert.deepEqual(ids(events), ['g2'], "g1's ack applied before the claim looked");
    assert.equal(events[0].state, 'executing');
    assert.equal((await mustGet(store, tenantId, 'solo')).state, 'executing', 'a stale receipt changes nothing');
    assert.deepEqual(
      (await store.transitionList({ tenantId, eventId: 'g2', limit: 20 })).map((t) => t.detail?.pull ?? t.kind),
      ['created', 'claim'],
    );
    await assert.rejects(
      store.eventPullSettleThenClaim({ settles: [], claim: pullClaimParams(tenantId) }),
      RangeError,
      'no settles: a plain claim',
    );
  });

  it('extends a claim (never shortens it), and lists a claim as expired only once its visibility timeout ended', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await pullDestination(store, tenantId);
    await insertAll(store, [newEvent(tenantId, 'x', { destination: { name: 'jobs' } })]);
    const now = T0 + 20 * SEC;
    await store.eventPullClaim(pullClaimParams(tenantId, { now, leaseUntil: now + 10 * SEC, receipt: 'r' }));
    const extended = await store.eventPullExtend({
      tenantId,
      id: 'x',
      receipt: 'r',
      now: now + 5 * SEC,
      leaseUntil: now + 30 * SEC,
    });
    assert.equal(extended?.leaseUntil, now + 30 * SEC);
    const kept = await store.eventPullExtend({
      tenantId,
      id: 'x',
      receipt: 'r',
      now: now + 6 * SEC,
      leaseUntil: now + 7 * SEC,
    });
    assert.equal(kept?.leaseUntil, now + 30 * SEC, 'never shortened');
    const mine = async (at: number) =>
      (await store.eventPullExpired({ now: at, limit: 1_000 })).filter((x) => x.event.tenantId === tenantId);
    assert.deepEqual(await mine(now + 29 * SEC), []);
    const expired = await mine(now + 31 * SEC);
    assert.deepEqual(
      expired.map((x) => [x.event.id, x.receipt]),
      [['x', 'r']],
    );
    const rescued = await store.eventRescue({
      leaseExpiredBefore: now + 3_600 * SEC,
      now: now + 31 * SEC,
      limit: 1_000,
    });
    assert.ok(!rescued.some((r) => r.tenantId === tenantId), 'the push rescue leaves pull claims to the expirer');
    const back = await store.eventPullSettle({
      tenantId,
      id: 'x',
      receipt: 'r',
      attempts: 1,
      action: 'expire',
      to: 'awaiting_retry',
      retryAt: now + 32 * SEC,
      error: 'visibility timeout expired',
      now: now + 31 * SEC,
    });
    assert.equal(back?.state, 'awaiting_retry');
    assert.equal(back?.lastError, 'visibility timeout expired');
    assert.deepEqual(await mine(now + 100 * SEC), []);
    const [again] = await store.eventPullClaim(pullClaimParams(tenantId, { now: now + 32 * SEC, receipt: 'r2' }));
    assert.equal(again.attempts, 2);
  });

  it('keeps group order: the next event of a group is claimable only once the previous one is terminal', async () => {
    const { store, tenantId } = await groupAndSolo(ctx.store());
    assert.deepEqual(ids(await store.eventPullClaim(pullClaimParams(tenantId, { receipt: 'a' }))), ['g1', 'solo']);
    assert.deepEqual(await store.eventPullClaim(pullClaimParams(tenantId)), [], 'g2 waits while g1 is executing');
    await store.eventPullSettle({
      tenantId,
      id: 'g1',
      receipt: 'a',
      attempts: null,
      action: 'nack',
      to: 'awaiting_retry',
      retryAt: T0 + 21 * SEC,
      now: T0 + 20 * SEC,
    });
    assert.deepEqual(
      await store.eventPullClaim(pullClaimParams(tenantId, { now: T0 + 20 * SEC })),
      [],
      'g2 waits while g1 awaits its retry',
    );
    assert.deepEqual(ids(await store.eventPullClaim(pullClaimParams(tenantId, { now: T0 + 21 * SEC, receipt: 'b' }))), [
      'g1',
    ]);
    await store.eventPullSettle({
      tenantId,
      id: 'g1',
      receipt: 'b',
      attempts: null,
      action: 'ack',
      to: 'succeeded',
      now: T0 + 22 * SEC,
    });
    assert.deepEqual(ids(await store.eventPullClaim(pullClaimParams(tenantId, { now: T0 + 22 * SEC }))), ['g2']);
  });

  it('holds a member created ahead of the claimed one, and of a member awaiting its retry', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await pullDestination(store, tenantId);
    await insertAll(store, [
      newEvent(tenantId, 'h', { destination: { name: 'jobs' }, group: 'g', fireAt: T0 + 10 * SEC }),
    ]);
    assert.deepEqual(ids(await store.eventPullClaim(pullClaimParams(tenantId, { receipt: 'a' }))), ['h']);
    await insertAll(
      store,
      [newEvent(tenantId, 'early', { destination: { name: 'jobs' }, group: 'g', fireAt: T0 })],
      T0 + 20 * SEC,
    );
    assert.deepEqual(
      await store.eventPullClaim(pullClaimParams(tenantId, { now: T0 + 21 * SEC })),
      [],
      'h is claimed: early waits',
    );
    await store.eventPullSettle({
      tenantId,
      id: 'h',
      receipt: 'a',
      attempts: null,
      action: 'nack',
      to: 'awaiting_retry',
      retryAt: T0 + 40 * SEC,
      now: T0 + 22 * SEC,
    });
    assert.deepEqual(
      await store.eventPullClaim(pullClaimParams(tenantId, { now: T0 + 30 * SEC })),
      [],
      'h awaits its retry: early still waits',
    );
    assert.deepEqual(
      ids(
        await store.eventPullClaim(
          pullClaimParams(tenantId, { now: T0 + 40 * SEC, leaseUntil: T0 + 90 * SEC, receipt: 'b' }),
        ),
      ),
      ['h'],
    );
    await store.eventPullSettle({
      tenantId,
      id: 'h',
      receipt: 'b',
      attempts: null,
      action: 'ack',
      to: 'succeeded',
      now: T0 + 41 * SEC,
    });
    assert.deepEqual(
      ids(await store.eventPullClaim(pullClaimParams(tenantId, { now: T0 + 42 * SEC, leaseUntil: T0 + 90 * SEC }))),
      ['early'],
    );
  });

  it('hands at most one member of a group to concurrent claims, while members arrive ahead of it', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await pullDestination(store, tenantId);
    for (let round = 0; round < 20; round++) {
      const group = `race-${round}`;
      await insertAll(store, [
        newEvent(tenantId, `${group}-a`, { destination: { name: 'jobs' }, group, fireAt: T0 + 10 * SEC }),
      ]);
      // Two claims race while a member with an earlier fireAt is created in between.
      const results = await Promise.all([
        store.eventPullClaim(pullClaimParams(tenantId, { max: 100, receipt: `A${round}` })),
        store.eventInsertMany({
          events: [newEvent(tenantId, `${group}-b`, { destination: { name: 'jobs' }, group, fireAt: T0 })],
          now: T0 + 20 * SEC,
        }),
        store.eventPullClaim(pullClaimParams(tenantId, { max: 100, receipt: `B${round}` })),
      ]);
      const claimed = [...results[0], ...results[2]].filter((e) => e.group === group);
      assert.ok(claimed.length <= 1, `round ${round}: ${claimed.length} members of one group claimed at once`);
      for (const e of [...results[0], ...results[2]]) {
        await store.eventPullSettle({
          tenantId,
          id: e.id,
          receipt: e === results[0].find((x) => x.id === e.id) ? `A${round}` : `B${round}`,
          attempts: null,
          action: 'ack',
          to: 'succeeded',
          now: T0 + 21 * SEC,
        });
      }
      const rest = await store.eventPullClaim(pullClaimParams(tenantId, { max: 100, receipt: `C${round}` }));
      assert.ok(rest.filter((e) => e.group === group).length <= 1);
      for (const e of rest)
        await store.eventPullSettle({
          tenantId,
          id: e.id,
          receipt: `C${round}`,
          attempts: null,
          action: 'ack',
          to: 'succeeded',
          now: T0 + 22 * SEC,
        });
    }
  });

  it('hands each event to one of two concurrent claims', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await pullDestination(store, tenantId);
    await insertAll(
      store,
      Array.from({ length: 30 }, (_, i) =>
        newEvent(tenantId, `k${String(i).padStart(2, '0')}`, { destination: { name: 'jobs' }, fireAt: T0 + i }),
      ),
    );
    const [a, b] = await Promise.all([
      store.eventPullClaim(pullClaimParams(tenantId, { max: 20, receipt: 'A' })),
      store.eventPullClaim(pullClaimParams(tenantId, { max: 20, receipt: 'B' })),
    ]);
    const all = [...ids(a), ...ids(b)];
    assert.equal(new Set(all).size, all.length, 'no event in both');
    assert.equal(all.length, 30);
  });

  it('follows the destination: an edit to a pull destination makes the event pullable, a replay reads the kind again', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await pullDestination(store, tenantId);
    const shard = uniqueShard();
    await insertAll(store, [newEvent(tenantId, 'm', { shard, destination: { name: 'orders' } })]);
    const edited = await store.eventUpdate({
      tenantId,
      id: 'm',
      now: T0 + 1,
      patch: { destination: { name: 'jobs' } },
    });
    assert.equal(edited.kind, 'ok');
    assert.deepEqual(await store.eventListDue({ shards: [shard], after: null, untilMs: T0 + 60 * SEC, limit: 10 }), []);
    assert.deepEqual(ids(await store.eventPullClaim(pullClaimParams(tenantId))), ['m']);
  });
}
