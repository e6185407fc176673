/** Conformance: eventInsertMany (idempotence, in-batch duplicates) and eventClaim (conditional fire). */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { EventRecord } from '../../core/event.ts';
import {
  claimOne,
  insertAll,
  insertOne,
  LEASE_MS,
  mustClaim,
  mustGet,
  mustRecord,
  newEvent,
  newTenant,
  outcome,
  OWNER_A,
  pullDestination,
  SEC,
  T0,
  twoTenants,
  uniqueShard,
  type SuiteContext,
} from './fixtures.ts';

export function insertCases(ctx: SuiteContext): void {
  it('creates an event with every field stored as given', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const input = newEvent(tenantId, 'order-8812-timeout', {
      shard: 17,
      fireAt: T0 + 90 * SEC,
      destination: { url: 'https://example.com/hook?a=1' },
      payload: '{ "orderId": 8812, "note": "ünïcødé ✓" }',
      headers: { 'x-kind': 'timeout', 'x-b': '2' },
      group: 'order-8812',
      retry: { maxAttempts: 12, minBackoffMs: 1_000, maxBackoffMs: 3_600_000, coefficient: 2 },
      expireAt: T0 + 4 * 3_600 * SEC,
      tags: { team: 'checkout' },
      type: 'order.timeout',
      requestHash: 'abc123',
    });
    const [result] = await store.eventInsertMany({ events: [input], now: T0 });
    assert.equal(result.kind, 'created');
    const expected: Omit<EventRecord, 'seq'> = {
      tenantId,
      id: 'order-8812-timeout',
      shard: 17,
      state: 'scheduled',
      version: 1,
      fireAt: T0 + 90 * SEC,
      dueAt: T0 + 90 * SEC,
      destination: { url: 'https://example.com/hook?a=1' },
      queue: 'url:https://example.com',
      payload: '{ "orderId": 8812, "note": "ünïcødé ✓" }',
      headers: { 'x-kind': 'timeout', 'x-b': '2' },
      group: 'order-8812',
      retry: { maxAttempts: 12, minBackoffMs: 1_000, maxBackoffMs: 3_600_000, coefficient: 2 },
      expireAt: T0 + 4 * 3_600 * SEC,
      tags: { team: 'checkout' },
      type: 'order.timeout',
      attempts: 0,
      lastStatus: null,
      lastError: null,
      requestHash: 'abc123',
      createdAt: T0,
      updatedAt: T0,
      leaseOwner: null,
      leaseUntil: null,
    };
    const { seq, ...rest } = result.event;
    assert.ok(Number.isSafeInteger(seq) && seq > 0, 'seq is a positive integer');
    assert.deepEqual(rest, expected);
    assert.deepEqual(
      await store.eventGet({ tenantId, id: input.id }),
      result.event,
      'get returns what insert returned',
    );
  });

  it('answers existing for the same id and body, conflict for another body, and changes nothing', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const stored = await insertOne(store, newEvent(tenantId, 'e1', { requestHash: 'h1' }));
    const again = await store.eventInsertMany({
      events: [
        newEvent(tenantId, 'e1', { requestHash: 'h1', payload: '{"ignored":true}' }),
        newEvent(tenantId, 'e1', { requestHash: 'h2', fireAt: T0 + 999 * SEC }),
      ],
      now: T0 + 5 * SEC,
    });
    assert.deepEqual(again, [
      { kind: 'existing', event: stored },
      { kind: 'conflict', event: stored },
    ]);
    assert.deepEqual(await store.eventGet({ tenantId, id: 'e1' }), stored);
  });

  it('settles repeated ids inside one batch: the first wins, later ones compare by hash', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const results = await store.eventInsertMany({
      events: [
        newEvent(tenantId, 'dup', { requestHash: 'h1', payload: '{"n":1}' }),
        newEvent(tenantId, 'other'),
        newEvent(tenantId, 'dup', { requestHash: 'h1', payload: '{"n":2}' }),
        newEvent(tenantId, 'dup', { requestHash: 'h2', payload: '{"n":3}' }),
      ],
      now: T0,
    });
    assert.deepEqual(
      results.map((r) => [r.kind, r.event.id]),
      [
        ['created', 'dup'],
        ['created', 'other'],
        ['existing', 'dup'],
        ['conflict', 'dup'],
      ],
    );
    for (const r of [results[2], results[3]]) assert.equal(r.event.payload, '{"n":1}');
    assert.deepEqual(results[2].event, results[0].event);
    assert.equal((await mustGet(store, tenantId, 'dup')).payload, '{"n":1}');
    assert.equal(
      (await store.transitionList({ tenantId, eventId: 'dup', limit: 10 })).length,
      1,
      'one created transition',
    );
  });

  it('settles a large batch event by event: stored ids, repeats near and far apart, numbered in batch order', async () => {
    // 150 events: more than one multi-row statement of any backend that chunks its insert.
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const same = await insertOne(store, newEvent(tenantId, 'stored-same', { requestHash: 'hs' }));
    const diff = await insertOne(store, newEvent(tenantId, 'stored-diff', { requestHash: 'hd' }));
    const events = Array.from({ length: 150 }, (_, i) => newEvent(tenantId, `e${i}`, { requestHash: `h${i}` }));
    events[3] = newEvent(tenantId, 'stored-same', { requestHash: 'hs' });
    events[70] = newEvent(tenantId, 'stored-diff', { requestHash: 'other' });
    events[5] = newEvent(tenantId, 'e4', { requestHash: 'h4' }); // right after its first
    events[140] = newEvent(tenantId, 'e10', { requestHash: 'changed' }); // far after its first
    const results = await store.eventInsertMany({ events, now: T0 });
    const expected = events.map((_, i) =>
      i === 3 || i === 5 ? 'existing' : i === 70 || i === 140 ? 'conflict' : 'created',
    );
    assert.deepEqual(
      results.map((r) => r.kind),
      expected,
    );
    assert.deepEqual(results[3].event, same);
    assert.deepEqual(results[70].event, diff);
    assert.deepEqual(results[5].event, results[4].event);
    assert.deepEqual(results[140].event, results[10].event);
    const created = results.filter((r) => r.kind === 'created').map((r) => r.event);
    assert.equal(created.length, 146);
    const seqs = created.map((e) => e.seq);
    assert.deepEqual(
      [...seqs].sort((x, y) => x - y),
      seqs,
      'seq grows in batch order',
    );
    assert.ok(seqs[0] > diff.seq);
    for (const e of created) {
      assert.deepEqual(await mustGet(store, tenantId, e.id), e);
      assert.equal(
        (await store.transitionList({ tenantId, eventId: e.id, limit: 10 })).length,
        1,
        `one created transition for ${e.id}`,
      );
    }
  });

  it('settles a batch mixing tenants that use the same ids, some stored already, each under its own tenant', async () => {
    // 140 events alternating between two tenants, so every multi-row statement holds both
    // tenants' copies of an id; one id is stored already for one tenant only.
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const storedB = await insertOne(store, newEvent(b, 'x7', { requestHash: 'stored' }));
    const events = Array.from({ length: 140 }, (_, i) =>
      newEvent(i % 2 === 0 ? a : b, `x${i >> 1}`, { requestHash: `h${i}`, payload: `{"i":${i}}` }),
    );
    const results = await store.eventInsertMany({ events, now: T0 });
    const expected = events.map((e, i) => (i === 15 ? 'conflict' : 'created'));
    assert.deepEqual(
      results.map((r) => r.kind),
      expected,
    );
    assert.deepEqual(results[15].event, storedB);
    for (const [i, r] of results.entries()) {
      if (r.kind !== 'created') continue;
      assert.equal(r.event.tenantId, events[i].tenantId);
      assert.equal(r.event.payload, `{"i":${i}}`);
      assert.deepEqual(await mustGet(store, r.event.tenantId, r.event.id), r.event);
    }
    const seqs = results.filter((r) => r.kind === 'created').map((r) => r.event.seq);
    assert.equal(new Set(seqs).size, seqs.length);
    assert.deepEqual(
      [...seqs].sort((x, y) => x - y),
      seqs,
      'seq grows in batch order',
    );
  });

  it('settles seeded random batches like a model: first occurrence wins, stored ids answer existing or conflict, pull follows the destination', async () => {
    // Three tenants, ids from a small pool (repeats in a chunk, across chunks and across batches),
    // two request hashes, events to a pull destination and to push ones mixed in every chunk.
    const store = ctx.store();
    const tenants = [await newTenant(store), await newTenant(store), await newTenant(store)];
    await pullDestination(store, tenants[0], 'inbox');
    const shard = uniqueShard();
    let seed = 20261126;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const model = new Map<string, { hash: string; seq: number }>();
    let lastSeq = 0;
    for (let round = 0; round < 3; round++) {
      const events = Array.from({ length: 157 }, () => {
        const tenantId = tenants[random(3)];
        return newEvent(tenantId, `r${random(120)}`, {
          shard,
          requestHash: `h${random(2)}`,
          destination: { name: random(4) === 0 ? 'inbox' : 'orders' },
        });
      });
      const results = await store.eventInsertMany({ events, now: T0 + round });
      for (const [i, e] of events.entries()) {
        const key = `${e.tenantId}/${e.id}`;
        const known = model.get(key);
        const r = results[i];
        if (!known) {
          assert.equal(r.kind, 'created', `${key} (round ${round}, #${i})`);
          assert.ok(r.event.seq > lastSeq, `${key}: seq grows in batch order`);
          lastSeq = r.event.seq;
          model.set(key, { hash: e.requestHash, seq: r.event.seq });
          assert.deepEqual(await mustGet(store, e.tenantId, e.id), r.event);
        } else {
          assert.equal(
            r.kind,
            known.hash === e.requestHash ? 'existing' : 'conflict',
            `${key} (round ${round}, #${i})`,
          );
          assert.equal(r.event.seq, known.seq);
        }
      }
    }
    // The read-ahead lists the push events only: a created event to `inbox` of tenants[0] is pull.
    const due = await store.eventListDue({ shards: [shard], after: null, untilMs: T0 + 3_600 * SEC, limit: 10_000 });
    const listed = new Set(due.map((d) => `${d.tenantId}/${d.id}`));
    for (const [key] of model) {
      const [tenantId, id] = key.split('/');
      const stored = await mustGet(store, tenantId, id);
      const pull = tenantId === tenants[0] && 'name' in stored.destination && stored.destination.name === 'inbox';
      assert.equal(listed.has(key), !pull, `${key}: ${pull ? 'pull, not listed' : 'push, listed'}`);
    }
  });

  it('keeps ids apart per tenant', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const ea = await insertOne(store, newEvent(a, 'same-id', { requestHash: 'ha' }));
    const eb = await insertOne(store, newEvent(b, 'same-id', { requestHash: 'hb', payload: '{"b":1}' }));
    assert.notEqual(ea.seq, eb.seq);
    assert.equal((await mustGet(store, a, 'same-id')).requestHash, 'ha');
    assert.equal((await mustGet(store, b, 'same-id')).payload, '{"b":1}');
  });

  it('numbers events in creation order, across batches', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const first = await insertAll(store, [newEvent(tenantId, 'z'), newEvent(tenantId, 'a'), newEvent(tenantId, 'm')]);
    const second = await insertAll(store, [newEvent(tenantId, 'b')], T0 + 1);
    const seqs = [...first, ...second].map((e) => e.seq);
    assert.deepEqual(
      [...seqs].sort((x, y) => x - y),
      seqs,
      'seq grows in insert order',
    );
    assert.equal(new Set(seqs).size, seqs.length);
  });

  it('returns nothing for an empty batch', async () => {
    assert.deepEqual(await ctx.store().eventInsertMany({ events: [], now: T0 }), []);
  });

  it('appends one created transition per new event', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await insertOne(store, newEvent(tenantId, 'e1'), T0 + 7);
    const trace = await store.transitionList({ tenantId, eventId: 'e1', limit: 10 });
    assert.equal(trace.length, 1);
    assert.deepEqual(
      { ...trace[0], detail: null },
      {
        tenantId,
        eventId: 'e1',
        seq: 1,
        at: T0 + 7,
        kind: 'created',
        fromState: null,
        toState: 'scheduled',
        attempt: 0,
        status: null,
        error: null,
        durationMs: null,
        latenessMs: null,
        detail: null,
      },
    );
  });
}

export function claimCases(ctx: SuiteContext): void {
  it('claims a scheduled event at its version, with lease and lateness', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const e = await insertOne(store, newEvent(tenantId, 'e1', { fireAt: T0 + 10 * SEC }));
    const now = T0 + 10 * SEC + 42;
    const claimed = await mustClaim(store, e, now, OWNER_A);
    assert.deepEqual(claimed, {
      ...e,
      state: 'executing',
      version: 2,
      attempts: 1,
      leaseOwner: OWNER_A,
      leaseUntil: now + LEASE_MS,
      updatedAt: now,
    });
    assert.deepEqual(await mustGet(store, tenantId, 'e1'), claimed);
    const trace = await store.transitionList({ tenantId, eventId: 'e1', limit: 10 });
    assert.equal(trace.length, 2);
    const t = trace[1];
    assert.deepEqual(
      [t.seq, t.at, t.kind, t.fromState, t.toState, t.attempt, t.latenessMs],
      [2, now, 'state', 'scheduled', 'executing', 1, 42],
    );
    assert.equal(t.detail?.owner, OWNER_A);
  });

  it('refuses a stale version, an executing event and a canceled one, and leaves them untouched', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const [stale, busy, gone] = await insertAll(
      store,
      ['stale', 'busy', 'gone'].map((id) => newEvent(tenantId, id)),
    );
    const edited = await store.eventUpdate({ tenantId, id: 'stale', now: T0 + 1, patch: { payload: '{"v":2}' } });
    assert.equal(edited.kind, 'ok');
    const busyClaimed = await mustClaim(store, busy, T0 + 2);
    assert.equal((await store.eventCancel({ tenantId, id: 'gone', now: T0 + 3 })).kind, 'ok');
    const before = await Promise.all(['stale', 'busy', 'gone'].map((id) => mustGet(store, tenantId, id)));

    const now = T0 + 20 * SEC;
    const out = await store.eventClaim({
      refs: [stale, busy, busyClaimed, gone].map((e) => ({ tenantId, id: e.id, version: e.version })),
      now,
      owner: 'node-b',
      leaseUntil: now + LEASE_MS,
    });
    assert.deepEqual(out, []);
    const afterwards = await Promise.all(['stale', 'busy', 'gone'].map((id) => mustGet(store, tenantId, id)));
    assert.deepEqual(afterwards, before);
  });

  it('claims only the fireable refs of a batch and returns them', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const [a, b, c] = await insertAll(
      store,
      ['a', 'b', 'c'].map((id) => newEvent(tenantId, id)),
    );
    const now = T0 + 11 * SEC;
    const out = await store.eventClaim({
      refs: [
        { tenantId, id: a.id, version: a.version },
        { tenantId, id: b.id, version: b.version + 7 },
        { tenantId, id: 'missing', version: 1 },
        { tenantId, id: c.id, version: c.version },
        { tenantId, id: a.id, version: a.version },
      ],
      now,
      owner: OWNER_A,
      leaseUntil: now + LEASE_MS,
    });
    assert.deepEqual(out.map((e) => e.id).sort(), ['a', 'c'], 'a repeated ref is claimed once');
    assert.equal((await mustGet(store, tenantId, 'b')).state, 'scheduled');
    assert.deepEqual(await store.eventClaim({ refs: [], now, owner: OWNER_A, leaseUntil: now }), []);
  });

  it('never claims another tenant’s event', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const e = await insertOne(store, newEvent(a, 'mine'));
    assert.equal(await claimOne(store, { tenantId: b, id: 'mine', version: e.version }, T0 + 20 * SEC), null);
    assert.equal((await mustGet(store, a, 'mine')).state, 'scheduled');
  });

  it('claims an awaiting_retry event again, counting the attempt', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const e = await insertOne(store, newEvent(tenantId, 'e1'));
    const first = await mustClaim(store, e, T0 + 10 * SEC);
    const waiting = await mustRecord(
      store,
      outcome(first, 'awaiting_retry', { retryAt: T0 + 15 * SEC, status: 503 }),
      T0 + 11 * SEC,
    );
    const second = await mustClaim(store, waiting, T0 + 15 * SEC + 3);
    assert.equal(second.attempts, 2);
    assert.equal(second.version, waiting.version + 1);
    const last = (await store.transitionList({ tenantId, eventId: 'e1', limit: 10 })).at(-1);
    assert.deepEqual(
      [last?.fromState, last?.toState, last?.attempt, last?.latenessMs],
      ['awaiting_retry', 'executing', 2, 3],
    );
  });
}
