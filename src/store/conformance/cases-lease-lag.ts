/** Conformance: eventLeaseRenew (a live node keeps its claims) and shardLag (late work per shard). */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { insertAll, LEASE_MS, mustClaim, mustGet, newEvent, OWNER_A, OWNER_B, SEC, T0, uniqueShard, withFreshStore, newTenant, type SuiteContext } from './fixtures.ts';

export function leaseRenewCases(ctx: SuiteContext): void {
  it('extends only the owner’s executing leases, never shortens them, and renewed claims are not rescued', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const [a1, a2, b1, idle] = await insertAll(store, ['a1', 'a2', 'b1', 'idle'].map((id) => newEvent(tenantId, id, { fireAt: T0 })));
    const now = T0 + SEC;
    await mustClaim(store, a1, now, OWNER_A);
    await mustClaim(store, a2, now, OWNER_A);
    await mustClaim(store, b1, now, OWNER_B);
    const renewedUntil = now + 10 * LEASE_MS;
    assert.equal(await store.eventLeaseRenew({ owner: OWNER_A, leaseUntil: renewedUntil }), 2);
    assert.equal((await mustGet(store, tenantId, a1.id)).leaseUntil, renewedUntil);
    assert.equal((await mustGet(store, tenantId, b1.id)).leaseUntil, now + LEASE_MS);
    assert.equal((await mustGet(store, tenantId, idle.id)).leaseUntil, null);
    // An earlier time never shortens a lease.
    assert.equal(await store.eventLeaseRenew({ owner: OWNER_A, leaseUntil: now }), 0);
    assert.equal((await mustGet(store, tenantId, a2.id)).leaseUntil, renewedUntil);
    // After B's lease ends, only B's claim is rescued.
    const rescued = await store.eventRescue({ leaseExpiredBefore: now + 2 * LEASE_MS, now: now + 2 * LEASE_MS, limit: 100 });
    assert.deepEqual(rescued.map((r) => r.id).filter((id) => [a1.id, a2.id, b1.id].includes(id)), [b1.id]);
    // The rescue cleared B's lease: renewing for B now changes nothing.
    assert.equal(await store.eventLeaseRenew({ owner: OWNER_B, leaseUntil: renewedUntil }), 0);
  });
}

export function shardLagCases(ctx: SuiteContext): void {
  it('counts fireable events due by now per shard, the latest first, leaving out shards with nothing due', async () => {
    await withFreshStore(ctx.make, async (store) => {
      const tenantId = await newTenant(store);
      const s1 = uniqueShard();
      const s2 = uniqueShard();
      const s3 = uniqueShard();
      const [claimed] = await insertAll(store, [
        newEvent(tenantId, 'x-claimed', { shard: s1, fireAt: T0 - 60 * SEC }),
        newEvent(tenantId, 'x1', { shard: s1, fireAt: T0 - 5 * SEC }),
        newEvent(tenantId, 'x2', { shard: s1, fireAt: T0 - 1 * SEC }),
        newEvent(tenantId, 'y1', { shard: s2, fireAt: T0 - 30 * SEC }),
        newEvent(tenantId, 'z-future', { shard: s3, fireAt: T0 + 30 * SEC }),
      ]);
      await mustClaim(store, claimed, T0);
      const lag = await store.shardLag({ now: T0, limit: 100 });
      assert.deepEqual(lag, [
        { shard: s2, dueEvents: 1, oldestDueAt: T0 - 30 * SEC },
        { shard: s1, dueEvents: 2, oldestDueAt: T0 - 5 * SEC },
      ]);
      assert.deepEqual(await store.shardLag({ now: T0, limit: 1 }), [lag[0]]);
    });
  });
}
