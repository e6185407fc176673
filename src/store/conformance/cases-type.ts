/** Conformance: the event `type` (stored, edited, listed by its index). */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { EventListParams, EventMutateResult, Store } from '../store.ts';
import { insertAll, insertOne, mustGet, newEvent, newTenant, SEC, T0, type SuiteContext } from './fixtures.ts';

async function listIds(store: Store, params: EventListParams): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 100; i++) {
    const page = await store.eventList({ ...params, cursor });
    ids.push(...page.events.map((e) => e.id));
    if (page.nextCursor === null) return ids;
    cursor = page.nextCursor;
  }
  throw new Error('eventList: cursor never ended');
}

function ok(r: EventMutateResult) {
  assert.equal(r.kind, 'ok');
  return (r as Extract<EventMutateResult, { kind: 'ok' }>).event;
}

export function typeCases(ctx: SuiteContext): void {
  it('stores a type, or null when none is given (absent or null)', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const [a, b, c] = await insertAll(store, [
      newEvent(tenantId, 'ta', { type: 'order.timeout' }),
      newEvent(tenantId, 'tb'),
      newEvent(tenantId, 'tc', { type: null }),
    ]);
    assert.deepEqual([a.type, b.type, c.type], ['order.timeout', null, null]);
    assert.equal((await mustGet(store, tenantId, 'ta')).type, 'order.timeout');
    assert.equal((await mustGet(store, tenantId, 'tb')).type, null);
  });

  it('edits the type (set, change, remove), naming the field, and keeps it through a claim', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await insertOne(store, newEvent(tenantId, 'u'));
    const set = ok(await store.eventUpdate({ tenantId, id: 'u', now: T0 + 1, patch: { type: 'invoice.due' } }));
    assert.equal(set.type, 'invoice.due');
    const t = (await store.transitionList({ tenantId, eventId: 'u', limit: 10 }))[1];
    assert.deepEqual(t.detail?.fields, ['type']);
    const same = await store.eventUpdate({ tenantId, id: 'u', now: T0 + 2, patch: { type: 'invoice.due' } });
    assert.equal(ok(same).version, set.version, 'the same type changes nothing');
    const removed = ok(await store.eventUpdate({ tenantId, id: 'u', now: T0 + 3, patch: { type: null } }));
    assert.equal(removed.type, null);
    const kept = ok(
      await store.eventUpdate({ tenantId, id: 'u', now: T0 + 4, patch: { type: 'x.y', fireAt: T0 + 5 * SEC } }),
    );
    const [claimed] = await store.eventClaim({
      refs: [kept],
      now: T0 + 6 * SEC,
      owner: 'n1',
      leaseUntil: T0 + 60 * SEC,
    });
    assert.equal(claimed.type, 'x.y');
    assert.equal((await mustGet(store, tenantId, 'u')).type, 'x.y');
  });

  it('lists by type, newest first, paged, alone and with other filters, one tenant only', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const other = await newTenant(store);
    await insertAll(store, [
      newEvent(tenantId, 'l1', { type: 'a.b', destination: { name: 'orders' } }),
      newEvent(tenantId, 'l2', { type: 'c.d' }),
      newEvent(tenantId, 'l3', { type: 'a.b', destination: { name: 'billing' }, group: 'g' }),
      newEvent(tenantId, 'l4'),
      newEvent(tenantId, 'l5', { type: 'a.b', fireAt: T0 + 99 * SEC }),
    ]);
    await insertOne(store, newEvent(other, 'o1', { type: 'a.b' }));
    await store.eventCancel({ tenantId, id: 'l1', now: T0 });
    assert.deepEqual(await listIds(store, { tenantId, type: 'a.b', limit: 1 }), ['l5', 'l3', 'l1']);
    assert.deepEqual(await listIds(store, { tenantId, type: 'c.d', limit: 10 }), ['l2']);
    assert.deepEqual(await listIds(store, { tenantId, type: 'none', limit: 10 }), []);
    assert.deepEqual(await listIds(store, { tenantId, type: 'a.b', state: 'scheduled', limit: 10 }), ['l5', 'l3']);
    assert.deepEqual(await listIds(store, { tenantId, type: 'a.b', destination: 'billing', limit: 10 }), ['l3']);
    assert.deepEqual(await listIds(store, { tenantId, type: 'a.b', group: 'g', limit: 10 }), ['l3']);
    assert.deepEqual(await listIds(store, { tenantId, type: 'a.b', fromMs: T0 + 50 * SEC, limit: 10 }), ['l5']);
    assert.deepEqual(await listIds(store, { tenantId: other, type: 'a.b', limit: 10 }), ['o1']);
  });
}
