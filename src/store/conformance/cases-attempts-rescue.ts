/** Conformance: eventRecordAttempts (conditional on owner and version) and eventRescue. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { EventRecord } from '../../core/event.ts';
import type { Store } from '../store.ts';
import {
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
  OWNER_B,
  SEC,
  T0,
  twoTenants,
  withFreshStore,
  type SuiteContext,
} from './fixtures.ts';

async function lastTransition(store: Store, e: { tenantId: string; id: string }) {
  const trace = await store.transitionList({ tenantId: e.tenantId, eventId: e.id, limit: 100 });
  return trace[trace.length - 1];
}

export function attemptCases(ctx: SuiteContext): void {
  it('records a success: state, version, cleared lease, status and a transition', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const running = await mustClaim(store, await insertOne(store, newEvent(tenantId, 'ok')), T0 + 10 * SEC);
    const now = T0 + 10 * SEC + 80;
    const done = await mustRecord(store, outcome(running, 'succeeded', { status: 204, durationMs: 75 }), now);
    assert.deepEqual(done, {
      ...running,
      state: 'succeeded',
      version: running.version + 1,
      leaseOwner: null,
      leaseUntil: null,
      lastStatus: 204,
      lastError: null,
      updatedAt: now,
    });
    const t = await lastTransition(store, done);
    assert.deepEqual(
      [t.seq, t.at, t.kind, t.fromState, t.toState, t.attempt, t.status, t.error, t.durationMs],
      [3, now, 'state', 'executing', 'succeeded', 1, 204, null, 75],
    );
  });

  it('records a transient failure as awaiting_retry due at retryAt', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const running = await mustClaim(store, await insertOne(store, newEvent(tenantId, 'r')), T0 + 10 * SEC);
    const retryAt = T0 + 70 * SEC;
    const waiting = await mustRecord(
      store,
      outcome(running, 'awaiting_retry', { retryAt, status: 503, error: 'HTTP 503' }),
      T0 + 11 * SEC,
    );
    assert.deepEqual(
      [
        waiting.state,
        waiting.dueAt,
        waiting.fireAt,
        waiting.attempts,
        waiting.lastStatus,
        waiting.lastError,
        waiting.leaseOwner,
      ],
      ['awaiting_retry', retryAt, running.fireAt, 1, 503, 'HTTP 503', null],
    );
    const t = await lastTransition(store, waiting);
    assert.deepEqual([t.toState, t.status, t.error, t.attempt], ['awaiting_retry', 503, 'HTTP 503', 1]);
  });

  it('records discarded and archived outcomes', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const [d, a] = await insertAll(store, [newEvent(tenantId, 'd'), newEvent(tenantId, 'a')]);
    const dr = await mustClaim(store, d, T0 + 10 * SEC);
    const ar = await mustClaim(store, a, T0 + 10 * SEC);
    const applied = await store.eventRecordAttempts({
      outcomes: [
        outcome(dr, 'discarded', { status: 404, error: 'HTTP 404' }),
        outcome(ar, 'archived', { error: 'expired' }),
      ],
      now: T0 + 11 * SEC,
    });
    assert.deepEqual(applied, [true, true]);
    const [d2, a2] = [await mustGet(store, tenantId, 'd'), await mustGet(store, tenantId, 'a')];
    assert.deepEqual([d2.state, d2.lastStatus, d2.lastError], ['discarded', 404, 'HTTP 404']);
    assert.deepEqual([a2.state, a2.lastStatus, a2.lastError], ['archived', null, 'expired']);
  });

  it('applies only under the claiming owner at the claimed version, answering per outcome', async () => {
    const store = ctx.store();
    const [tenantId, other] = await twoTenants(store);
    const evs = await insertAll(
      store,
      ['good', 'owner', 'version', 'idle', 'tenant'].map((id) => newEvent(tenantId, id)),
    );
    const claimed = await store.eventClaim({
      refs: evs.filter((e) => e.id !== 'idle').map((e) => ({ tenantId, id: e.id, version: e.version })),
      now: T0 + 10 * SEC,
      owner: OWNER_A,
      leaseUntil: T0 + 10 * SEC + LEASE_MS,
    });
    const byId = new Map(claimed.map((e): [string, EventRecord] => [e.id, e]));
    const idle = evs.find((e) => e.id === 'idle')!;
    const before = await Promise.all(evs.map((e) => mustGet(store, tenantId, e.id)));
    const applied = await store.eventRecordAttempts({
      outcomes: [
        outcome(byId.get('owner')!, 'succeeded', { owner: OWNER_B }),
        outcome(byId.get('version')!, 'succeeded', { version: byId.get('version')!.version - 1 }),
        outcome(idle, 'succeeded', { owner: OWNER_A }),
        outcome(byId.get('tenant')!, 'succeeded', { tenantId: other }),
        outcome(byId.get('good')!, 'succeeded', { status: 200 }),
      ],
      now: T0 + 11 * SEC,
    });
    assert.deepEqual(applied, [false, false, false, false, true]);
    const afterwards = await Promise.all(evs.map((e) => mustGet(store, tenantId, e.id)));
    afterwards.forEach((e, i) => {
      if (e.id !== 'good') assert.deepEqual(e, before[i], `${e.id} is untouched`);
    });
    assert.deepEqual(await store.eventRecordAttempts({ outcomes: [], now: T0 }), []);
  });

  it('refuses a second outcome for the same claim', async () => {
    const store = ctx.store();
    const tenantId = await newTenant(store);
    const running = await mustClaim(store, await insertOne(store, newEvent(tenantId, 'twice')), T0 + 10 * SEC);
    const o = outcome(running, 'succeeded', { status: 200 });
    assert.deepEqual(await store.eventRecordAttempts({ outcomes: [o, o], now: T0 + 11 * SEC }), [true, false]);
    assert.equal((await store.transitionList({ tenantId, eventId: 'twice', limit: 10 })).length, 3);
  });
}

export function rescueCases(ctx: SuiteContext): void {
  it('makes executing events with an ended lease due again, and only those', async () => {
    await withFreshStore(ctx.make, async (store) => {
      const tenantId = await newTenant(store);
      const [old, fresh] = await insertAll(store, [newEvent(tenantId, 'old'), newEvent(tenantId, 'fresh')]);
      const oldRun = await mustClaim(store, old, T0 + 10 * SEC); // lease until T0+40s
      await mustClaim(store, fresh, T0 + 20 * SEC); // lease until T0+50s
      const now = T0 + 45 * SEC;
      const refs = await store.eventRescue({ leaseExpiredBefore: now, now, limit: 100 });
      assert.deepEqual(refs, [
        { tenantId, id: 'old', version: oldRun.version + 1, dueAt: now, shard: 0, group: null, queue: 'name:orders' },
      ]);
      const rescued = await mustGet(store, tenantId, 'old');
      assert.deepEqual(
        [rescued.state, rescued.dueAt, rescued.leaseOwner, rescued.leaseUntil, rescued.attempts, rescued.version],
        ['awaiting_retry', now, null, null, 1, oldRun.version + 1],
      );
      const t = await lastTransition(store, rescued);
      assert.deepEqual(
        [t.kind, t.fromState, t.toState, t.at, t.attempt],
        ['state', 'executing', 'awaiting_retry', now, 1],
      );
      assert.equal(t.detail?.reason, 'lease expired');
      assert.equal((await mustGet(store, tenantId, 'fresh')).state, 'executing');

      const [late] = await store.eventRecordAttempts({ outcomes: [outcome(oldRun, 'succeeded')], now: now + 1 });
      assert.equal(late, false, 'the old owner’s outcome no longer applies');
      assert.deepEqual(await store.eventRescue({ leaseExpiredBefore: now, now, limit: 100 }), []);
    });
  });

  it('rescues events held by another owner when notOwnedBy is given', async () => {
    await withFreshStore(ctx.make, async (store) => {
      const tenantId = await newTenant(store);
      const [mine, theirs] = await insertAll(store, [newEvent(tenantId, 'mine'), newEvent(tenantId, 'theirs')]);
      await mustClaim(store, mine, T0 + 10 * SEC, OWNER_A);
      await mustClaim(store, theirs, T0 + 10 * SEC, OWNER_B);
      const now = T0 + 11 * SEC;
      const refs = await store.eventRescue({ leaseExpiredBefore: now, notOwnedBy: OWNER_A, now, limit: 100 });
      assert.deepEqual(
        refs.map((r) => r.id),
        ['theirs'],
      );
      assert.equal((await mustGet(store, tenantId, 'mine')).state, 'executing');
      assert.equal((await mustGet(store, tenantId, 'theirs')).state, 'awaiting_retry');
    });
  });

  it('rescues events held by an owner when heldBy is given, whatever their leases', async () => {
    await withFreshStore(ctx.make, async (store) => {
      const tenantId = await newTenant(store);
      const [old, theirs] = await insertAll(store, [newEvent(tenantId, 'previous-run'), newEvent(tenantId, 'theirs')]);
      await mustClaim(store, old, T0 + 10 * SEC, OWNER_A);
      await mustClaim(store, theirs, T0 + 10 * SEC, OWNER_B);
      // A restarted OWNER_A renews its claim lease at once; its previous run's claim is still rescued.
      const now = T0 + 11 * SEC;
      await store.claimLeaseRenew({ owner: OWNER_A, leaseUntil: now + 100 * SEC });
      const refs = await store.eventRescue({ leaseExpiredBefore: now, heldBy: OWNER_A, now, limit: 100 });
      assert.deepEqual(
        refs.map((r) => r.id),
        ['previous-run'],
      );
      assert.equal((await mustGet(store, tenantId, 'previous-run')).state, 'awaiting_retry');
      assert.equal((await mustGet(store, tenantId, 'theirs')).state, 'executing');
    });
  });

  it('rescues at most limit events per call', async () => {
    await withFreshStore(ctx.make, async (store) => {
      const tenantId = await newTenant(store);
      const evs = await insertAll(
        store,
        [1, 2, 3].map((i) => newEvent(tenantId, `e${i}`)),
      );
      for (const e of evs) await mustClaim(store, e, T0 + 10 * SEC);
      const now = T0 + 100 * SEC;
      assert.equal((await store.eventRescue({ leaseExpiredBefore: now, now, limit: 2 })).length, 2);
      assert.equal((await store.eventRescue({ leaseExpiredBefore: now, now, limit: 2 })).length, 1);
      assert.equal((await store.eventRescue({ leaseExpiredBefore: now, now, limit: 2 })).length, 0);
    });
  });
}
