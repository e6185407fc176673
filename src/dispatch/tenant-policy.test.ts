import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from '../core/clock.ts';
import type { TenantRecord } from '../store/store.ts';
import { TENANT_POLICY_CACHE_MS, TenantPolicies } from './tenant-policy.ts';

/** A tenant loader whose reads the test answers one by one. */
function loader() {
  const calls: { tenantId: string; answer(missedAfter: string | null): void; fail(err: Error): void }[] = [];
  const load = (tenantId: string) =>
    new Promise<TenantRecord | null>((resolve, reject) => {
      calls.push({
        tenantId,
        answer: (missedAfter) =>
          resolve({ id: tenantId, settings: missedAfter === null ? {} : { missedAfter } } as unknown as TenantRecord),
        fail: reject,
      });
    });
  return { calls, load };
}

describe('TenantPolicies', () => {
  it('reads a tenant once however many events ask at once', async () => {
    const { calls, load } = loader();
    const policies = new TenantPolicies(load, new SimClock());
    const asks = Array.from({ length: 250 }, () => policies.get('t1'));
    assert.equal(calls.length, 1, 'one store read for 250 concurrent asks');
    calls[0].answer('1m');
    for (const policy of await Promise.all(asks)) assert.equal(policy.missedAfterMs, 60_000);
    assert.equal(policies.peek('t1')?.missedAfterMs, 60_000);
  });

  it('serves a policy past its cache time while one background read refreshes it', async () => {
    const { calls, load } = loader();
    const clock = new SimClock();
    const policies = new TenantPolicies(load, clock);
    const first = policies.get('t1');
    calls[0].answer('1m');
    await first;
    await clock.advance(TENANT_POLICY_CACHE_MS + 1);
    for (let i = 0; i < 100; i++) assert.equal(policies.peek('t1')?.missedAfterMs, 60_000, 'the old policy, at once');
    assert.equal(calls.length, 2, 'one refresh for 100 peeks');
    calls[1].answer(null);
    await new Promise((r) => setImmediate(r));
    assert.equal(policies.peek('t1')?.missedAfterMs, null, 'the refreshed policy');
    assert.equal(calls.length, 2);
  });

  it('keeps the last policy when a refresh fails, and asks the store again for one never read', async () => {
    const { calls, load } = loader();
    const clock = new SimClock();
    const policies = new TenantPolicies(load, clock);
    const never = policies.get('t2');
    calls[0].fail(new Error('store down'));
    await assert.rejects(never, /store down/);
    assert.equal(policies.peek('t2'), undefined);
    const again = policies.get('t2');
    assert.equal(calls.length, 2, 'a failed first read is not cached');
    calls[1].answer('30s');
    assert.equal((await again).missedAfterMs, 30_000);

    await clock.advance(TENANT_POLICY_CACHE_MS + 1);
    assert.equal(policies.peek('t2')?.missedAfterMs, 30_000);
    calls[2].fail(new Error('store down'));
    await new Promise((r) => setImmediate(r));
    assert.equal(policies.peek('t2')?.missedAfterMs, 30_000, 'still the last policy read');
    assert.equal(calls.length, 4, 'and a new refresh is under way');
  });
});
