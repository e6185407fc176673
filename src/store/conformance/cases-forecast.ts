/** Conformance: eventForecast (scheduled events per bucket of due time, per destination or tenant). */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { ForecastCount } from '../store.ts';
import { insertAll, mustClaim, newEvent, newTenant, SEC, T0, twoTenants, type SuiteContext } from './fixtures.ts';

const MIN = 60 * SEC;

/** Rows as a sorted "bucket key n" list, for order-free comparison. */
function lines(rows: ForecastCount[], keep: (r: ForecastCount) => boolean = () => true): string[] {
  return rows
    .filter(keep)
    .map((r) => `${r.bucket} ${r.key ?? '-'} ${r.n}`)
    .sort();
}

export function forecastCases(ctx: SuiteContext): void {
  it('counts scheduled events per bucket of due time, [from, to), not other states or tenants', async () => {
    const store = ctx.store();
    const [a, b] = await twoTenants(store);
    const evs = await insertAll(store, [
      newEvent(a, 'f1', { fireAt: T0 }),
      newEvent(a, 'f2', { fireAt: T0 + MIN - 1 }),
      newEvent(a, 'f3', { fireAt: T0 + MIN, destination: { name: 'billing' } }),
      newEvent(a, 'f4', { fireAt: T0 + 2 * MIN + 5, destination: { url: 'https://x.example.com/h' } }),
      newEvent(a, 'f5', { fireAt: T0 + 3 * MIN }), // at `to`: outside
      newEvent(a, 'f6', { fireAt: T0 - 1 }), // before `from`: outside
      newEvent(a, 'f7', { fireAt: T0 + 30 * SEC }), // canceled below
      newEvent(a, 'f8', { fireAt: T0 + 40 * SEC }), // executing below
      newEvent(b, 'g1', { fireAt: T0 + 10 * SEC }),
    ]);
    await store.eventCancel({ tenantId: a, id: 'f7', now: T0 });
    await mustClaim(store, evs[7], T0 + 40 * SEC);
    const window = { fromMs: T0, toMs: T0 + 3 * MIN, bucketMs: MIN };
    assert.deepEqual(lines(await store.eventForecast({ tenantId: a, ...window, by: 'none' })), [
      '0 - 2',
      '1 - 1',
      '2 - 1',
    ]);
    assert.deepEqual(lines(await store.eventForecast({ tenantId: a, ...window, by: 'destination' })), [
      '0 name:orders 2',
      '1 name:billing 1',
      '2 url:https://x.example.com 1',
    ]);
    const all = await store.eventForecast({ tenantId: null, ...window, by: 'tenant' });
    assert.deepEqual(
      lines(all, (r) => r.key === a || r.key === b),
      [`0 ${a} 2`, `0 ${b} 1`, `1 ${a} 1`, `2 ${a} 1`].sort(),
    );
  });

  it('follows edits: a moved event moves bucket, a fired or canceled one leaves', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const [e] = await insertAll(store, [
      newEvent(tenantId, 'm', { fireAt: T0 + 5 * SEC }),
      newEvent(tenantId, 'n', { fireAt: T0 + 6 * SEC }),
    ]);
    const window = { tenantId, fromMs: T0, toMs: T0 + 10 * MIN, bucketMs: MIN, by: 'none' as const };
    assert.deepEqual(lines(await store.eventForecast(window)), ['0 - 2']);
    await store.eventUpdate({ tenantId, id: 'm', now: T0, patch: { fireAt: T0 + 7 * MIN } });
    assert.deepEqual(lines(await store.eventForecast(window)), ['0 - 1', '7 - 1']);
    await store.eventCancel({ tenantId, id: 'n', now: T0 });
    assert.deepEqual(lines(await store.eventForecast(window)), ['7 - 1']);
    assert.equal(e.id, 'm');
    assert.deepEqual(await store.eventForecast({ ...window, tenantId: await newTenant(store) }), []);
  });

  it('refuses windows without buckets or with too many, and an unknown by', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    await assert.rejects(
      store.eventForecast({ tenantId, fromMs: T0, toMs: T0, bucketMs: MIN, by: 'none' }),
      RangeError,
    );
    await assert.rejects(
      store.eventForecast({ tenantId, fromMs: T0, toMs: T0 + 10_000 * MIN, bucketMs: MIN, by: 'none' }),
      RangeError,
    );
    await assert.rejects(
      store.eventForecast({ tenantId, fromMs: T0, toMs: T0 + MIN, bucketMs: 0, by: 'none' }),
      RangeError,
    );
    await assert.rejects(
      store.eventForecast({ tenantId, fromMs: T0, toMs: T0 + MIN, bucketMs: MIN, by: 'shard' as 'none' }),
      RangeError,
    );
  });
}
