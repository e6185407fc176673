/** Conformance: claimLeaseRenew (a live node keeps its claims) and shardLag (late work per shard). */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import {
  insertAll,
  LEASE_MS,
  mustClaim,
  mustGet,
  newEvent,
  OWNER_A,
  OWNER_B,
  SEC,
  T0,
  uniqueShard,
  withFreshStore,
  newTenant,
  type SuiteContext,
} from './fixtures.ts';

export function leaseRenewCases(ctx: SuiteContext): void {
  it('keeps the owner’s claims from rescue until its claim lease ends, never shortens it, and writes no event', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const [a1, a2, b1] = await insertAll(
      store,
      ['a1', 'a2', 'b1'].map((id) => newEvent(tenantId, id, { fireAt: T0 })),
    );
    const now = T0 + SEC;
    await mustClaim(store, a1, now, OWNER_A);
    await mustClaim(store, a2, now, OWNER_A);
    await mustClaim(store, b1, now, OWNER_B);
    const before = await mustGet(store, tenantId, a1.id);
    await store.claimLeaseRenew({ owner: OWNER_A, leaseUntil: now + 10 * LEASE_MS });
    // An earlier time never shortens a lease.
    await store.claimLeaseRenew({ owner: OWNER_A, leaseUntil: now });
    assert.deepEqual(await mustGet(store, tenantId, a1.id), before, 'the claimed event itself is not written');
    const mine = (refs: { id: string }[]) =>
      refs
        .map((r) => r.id)
        .filter((id) => [a1.id, a2.id, b1.id].includes(id))
        .sort();
    // After the claims' own leases end, only B's claim is rescued: A renewed.
    let at = now + 2 * LEASE_MS;
    assert.deepEqual(mine(await store.eventRescue({ leaseExpiredBefore: at, now: at, limit: 100 })), [b1.id]);
    // Just before A's claim lease ends nothing more; after it, A's claims too.
    at = now + 10 * LEASE_MS;
    assert.deepEqual(mine(await store.eventRescue({ leaseExpiredBefore: at, now: at, limit: 100 })), []);
    at += 1;
    assert.deepEqual(
      mine(await store.eventRescue({ leaseExpiredBefore: at, now: at, limit: 100 })),
      [a1.id, a2.id].sort(),
    );
  });

  it('lets a claim outlive its owner’s lease by its own lease', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const [e] = await insertAll(store, [newEvent(tenantId, 'own-lease', { fireAt: T0 })]);
    const now = T0 + SEC;
    await store.claimLeaseRenew({ owner: OWNER_B, leaseUntil: now });
    await mustClaim(store, e, now, OWNER_B); // its own lease: now + LEASE_MS
    const ids = async (at: number) =>
      (await store.eventRescue({ leaseExpiredBefore: at, now: at, limit: 100 })).map((r) => r.id);
    assert.ok(!(await ids(now + LEASE_MS)).includes(e.id));
    assert.ok((await ids(now + LEASE_MS + 1)).includes(e.id));
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
