/**
 * Conformance: the cluster methods — leader lease, node registry, shard map, the store's clock,
 * and claims fenced by the shard map. The lease is one row per store, so every lease test runs
 * on a store of its own. Lease expiry is observed with a 1 ms lease and a deadline-bounded poll
 * (the store's clock decides, so the test cannot fake it), never a fixed sleep.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { LeaderLease, Store } from '../store.ts';
import {
  claimOne,
  insertAll,
  LEASE_MS,
  mustClaim,
  mustGet,
  outcome,
  newEvent,
  newTenant,
  OWNER_A,
  OWNER_B,
  SEC,
  T0,
  unique,
  uniqueShard,
  withFreshStore,
  type SuiteContext,
} from './fixtures.ts';

/** Long enough that no test outlives it. */
const LONG_LEASE_MS = 600_000;

/** The lease and node calls at the suite's cluster time (ctx.time): `now` read at each call. */
function clusterCalls(ctx: SuiteContext) {
  const now = (store: Store) => ctx.time.now(store);
  return {
    now,
    elect: async (store: Store, nodeId: string, leaseMs = LONG_LEASE_MS) =>
      store.leaderAttemptElect({ nodeId, leaseMs, now: await now(store) }),
    async mustElect(store: Store, nodeId: string, leaseMs = LONG_LEASE_MS): Promise<LeaderLease> {
      const lease = await store.leaderAttemptElect({ nodeId, leaseMs, now: await now(store) });
      assert.ok(lease, `${nodeId} should win the lease`);
      return lease;
    },
    resign: async (store: Store, nodeId: string, epoch: number) =>
      store.leaderResign({ nodeId, epoch, now: await now(store) }),
    heartbeat: async (store: Store, nodeId: string, meta: Record<string, unknown> = {}) =>
      store.nodeHeartbeat({ nodeId, meta, now: await now(store) }),
    nodes: async (store: Store) => store.nodeList({ now: await now(store) }),
    assign: async (store: Store, leaderId: string, epoch: number, assignments: { shard: number; nodeId: string }[]) =>
      store.shardAssign({ leaderId, epoch, assignments, now: await now(store) }),
    /** Lets the cluster time pass the lease's expiry. */
    async expire(store: Store, lease: LeaderLease): Promise<void> {
      const left = lease.expiresAt - (await now(store));
      if (left >= 0) await ctx.time.pass(store, left + 1);
    },
  };
}

export function leaderCases(ctx: SuiteContext): void {
  const { now, elect, mustElect, resign, expire } = clusterCalls(ctx);
  it('records the shard count at its first call and answers that one ever after', async () => {
    const store = ctx.store();
    // The suite's store may have recorded one already (a node started on it): that one stands.
    const recorded = await store.shardCountRecord({ shardCount: 16 });
    assert.ok(Number.isInteger(recorded) && recorded > 0);
    assert.equal(
      await store.shardCountRecord({ shardCount: recorded * 2 }),
      recorded,
      'another count does not replace it',
    );
    assert.equal(await store.shardCountRecord({ shardCount: recorded }), recorded);
  });

  it('takes a free lease at epoch 1, at the cluster time; the holder extends it at the same epoch', async () => {
    await withFreshStore(ctx.make, async (store) => {
      assert.equal(await store.leaderGet(), null);
      const before = await now(store);
      const first = await mustElect(store, OWNER_A);
      const after = await now(store);
      assert.deepEqual([first.nodeId, first.epoch], [OWNER_A, 1]);
      assert.ok(
        first.expiresAt >= before + LONG_LEASE_MS && first.expiresAt <= after + LONG_LEASE_MS,
        'expiry = cluster time + leaseMs',
      );
      assert.deepEqual(await store.leaderGet(), first);

      const extended = await mustElect(store, OWNER_A, LONG_LEASE_MS * 2);
      assert.deepEqual([extended.nodeId, extended.epoch], [OWNER_A, 1]);
      assert.ok(extended.expiresAt > first.expiresAt);
      assert.deepEqual(await store.leaderGet(), extended);
    });
  });

  it('refuses another node while the lease is unexpired, and changes nothing', async () => {
    await withFreshStore(ctx.make, async (store) => {
      const held = await mustElect(store, OWNER_A);
      assert.equal(await elect(store, OWNER_B), null);
      assert.deepEqual(await store.leaderGet(), held);
    });
  });

  it('lets another node take an expired lease at epoch + 1', async () => {
    await withFreshStore(ctx.make, async (store) => {
      const short = await mustElect(store, OWNER_A, 1);
      assert.equal(short.epoch, 1);
      await expire(store, short);
      const taken = await mustElect(store, OWNER_B);
      assert.deepEqual([taken.nodeId, taken.epoch], [OWNER_B, 2]);
      assert.equal(await elect(store, OWNER_A), null, 'the old holder is refused');
      assert.deepEqual(await store.leaderGet(), taken);
    });
  });

  it('gives the lease a new epoch when its own holder comes back after expiry', async () => {
    await withFreshStore(ctx.make, async (store) => {
      await expire(store, await mustElect(store, OWNER_A, 1));
      const again = await mustElect(store, OWNER_A);
      assert.deepEqual([again.nodeId, again.epoch], [OWNER_A, 2]);
    });
  });

  it('frees the lease at once on resign, only for the holder at its epoch', async () => {
    await withFreshStore(ctx.make, async (store) => {
      const held = await mustElect(store, OWNER_A);
      await resign(store, OWNER_B, held.epoch);
      await resign(store, OWNER_A, held.epoch + 1);
      assert.equal(await elect(store, OWNER_B), null, 'wrong node or epoch: still held');

      await resign(store, OWNER_A, held.epoch);
      const resigned = await store.leaderGet();
      assert.ok(resigned && resigned.expiresAt <= (await now(store)), 'a resigned lease is expired');
      const next = await mustElect(store, OWNER_B);
      assert.deepEqual([next.nodeId, next.epoch], [OWNER_B, 2]);
    });
  });

  it('answers the store clock in epoch milliseconds, never going back between calls', async () => {
    const store = ctx.store();
    const a = await store.timeNow();
    const b = await store.timeNow();
    assert.ok(Number.isSafeInteger(a) && b >= a);
    assert.ok(
      Math.abs(a - Date.now()) < 3_600_000,
      'within an hour of this process’s clock: milliseconds, not seconds',
    );
  });
}

export function nodeShardCases(ctx: SuiteContext): void {
  const { now, mustElect, resign, heartbeat, nodes, assign, expire } = clusterCalls(ctx);
  it('registers a node on its first heartbeat and refreshes it on the next', async () => {
    const store = ctx.store();
    const nodeId = unique('node');
    const first = await heartbeat(store, nodeId, { host: 'h1', pid: 1 });
    assert.ok(Number.isSafeInteger(first.nowMs));
    const listed = (await nodes(store)).find((n) => n.id === nodeId);
    assert.ok(listed);
    assert.deepEqual(
      [listed.startedAt, listed.heartbeatAt, listed.meta],
      [first.nowMs, first.nowMs, { host: 'h1', pid: 1 }],
    );
    assert.ok(listed.ageMs >= 0 && listed.ageMs < 60_000, 'age at the cluster time');

    const second = await heartbeat(store, nodeId, { host: 'h1', pid: 2 });
    assert.ok(second.nowMs >= first.nowMs);
    const again = (await nodes(store)).find((n) => n.id === nodeId);
    assert.deepEqual(
      [again?.startedAt, again?.heartbeatAt, again?.meta],
      [first.nowMs, second.nowMs, { host: 'h1', pid: 2 }],
      'startedAt kept',
    );
  });

  it('shows the age of a silent node growing, and forgets a deleted one', async () => {
    const store = ctx.store();
    const [quiet, other] = [unique('node'), unique('node')];
    const { nowMs } = await heartbeat(store, quiet);
    await heartbeat(store, other);
    await ctx.time.pass(store, 2);
    const aged = (await nodes(store)).find((x) => x.id === quiet);
    assert.ok(aged && aged.ageMs >= 2, 'age grows');
    assert.equal(aged.heartbeatAt, nowMs);
    await store.nodeDelete({ nodeId: quiet });
    await store.nodeDelete({ nodeId: 'never-registered' });
    const ids = (await nodes(store)).map((n) => n.id);
    assert.ok(!ids.includes(quiet) && ids.includes(other));
  });

  it('assigns shards only for the current unexpired leader and epoch, replacing the whole map', async () => {
    await withFreshStore(ctx.make, async (store) => {
      assert.equal(await assign(store, OWNER_A, 1, [{ shard: 0, nodeId: OWNER_A }]), false, 'no leader yet');
      const lease = await mustElect(store, OWNER_A);
      const map1 = [
        { shard: 2, nodeId: OWNER_B },
        { shard: 0, nodeId: OWNER_A },
        { shard: 1, nodeId: OWNER_B },
      ];
      assert.equal(await assign(store, OWNER_A, lease.epoch, map1), true);
      assert.deepEqual(await store.shardList(), [
        { shard: 0, nodeId: OWNER_A, epoch: 1 },
        { shard: 1, nodeId: OWNER_B, epoch: 1 },
        { shard: 2, nodeId: OWNER_B, epoch: 1 },
      ]);
      assert.equal(await assign(store, OWNER_B, lease.epoch, []), false, 'not the leader');
      assert.equal(await assign(store, OWNER_A, lease.epoch + 1, []), false, 'not its epoch');
      assert.equal((await store.shardList()).length, 3, 'refused writes change nothing');

      assert.equal(await assign(store, OWNER_A, 1, [{ shard: 5, nodeId: OWNER_A }]), true);
      assert.deepEqual(await store.shardList(), [{ shard: 5, nodeId: OWNER_A, epoch: 1 }], 'the old map is gone');
      await assert.rejects(
        assign(store, OWNER_A, 1, [
          { shard: 1, nodeId: OWNER_A },
          { shard: 1, nodeId: OWNER_B },
        ]),
        RangeError,
      );
      assert.deepEqual(await store.shardList(), [{ shard: 5, nodeId: OWNER_A, epoch: 1 }]);
    });
  });

  it('refuses the map of a leader whose lease expired or was resigned', async () => {
    await withFreshStore(ctx.make, async (store) => {
      const short = await mustElect(store, OWNER_A, 1);
      await expire(store, short);
      assert.equal(await assign(store, OWNER_A, short.epoch, [{ shard: 0, nodeId: OWNER_A }]), false);
      const next = await mustElect(store, OWNER_B);
      await resign(store, OWNER_B, next.epoch);
      assert.equal(await assign(store, OWNER_B, next.epoch, [{ shard: 0, nodeId: OWNER_B }]), false);
      assert.deepEqual(await store.shardList(), []);
    });
  });

  it('claims with fenceByShardOwner only events in shards assigned to the owner', async () => {
    await withFreshStore(ctx.make, async (store) => {
      const tenantId = await newTenant(store);
      const [mine, theirs, nobody] = [uniqueShard(), uniqueShard(), uniqueShard()];
      const evs = await insertAll(store, [
        newEvent(tenantId, 'mine', { shard: mine }),
        newEvent(tenantId, 'theirs', { shard: theirs }),
        newEvent(tenantId, 'nobody', { shard: nobody }),
      ]);
      const lease = await mustElect(store, OWNER_A);
      await assign(store, OWNER_A, lease.epoch, [
        { shard: mine, nodeId: OWNER_A },
        { shard: theirs, nodeId: OWNER_B },
      ]);
      const now = T0 + 20 * SEC;
      const refs = evs.map((e) => ({ tenantId, id: e.id, version: e.version }));
      const fenced = (owner: string) =>
        store.eventClaim({ refs, now, owner, leaseUntil: now + LEASE_MS, fenceByShardOwner: true });
      assert.deepEqual(
        (await fenced(OWNER_A)).map((e) => e.id),
        ['mine'],
      );
      assert.deepEqual(
        (await fenced(OWNER_B)).map((e) => e.id),
        ['theirs'],
      );
      assert.deepEqual(await fenced('node-c'), []);
      assert.equal(
        (await store.eventGet({ tenantId, id: 'nobody' }))?.state,
        'scheduled',
        'an unassigned shard fires for no one',
      );

      // After the map moves `nobody`'s shard to C, C claims it; without the fence anyone may.
      await assign(store, OWNER_A, lease.epoch, [{ shard: nobody, nodeId: 'node-c' }]);
      assert.deepEqual(await fenced(OWNER_A), []);
      const unfenced = await claimOne(store, evs[2], now, OWNER_A);
      assert.equal(unfenced?.id, 'nobody', 'without the fence the map is not consulted');
    });
  });

  it('rescues the executing events of dead owners at once, whatever their leases: for the leader at its epoch, and only owners whose heartbeat is older than nodeTtlMs', async () => {
    await withFreshStore(ctx.make, async (store) => {
      const tenantId = await newTenant(store);
      const [dead, alive, gone] = [unique('dead'), unique('alive'), unique('gone')];
      const evs = await insertAll(
        store,
        ['d1', 'd2', 'a1', 'g1'].map((id) => newEvent(tenantId, id)),
      );
      const claimedAt = T0 + 10 * SEC;
      const [d1, d2] = [
        await mustClaim(store, evs[0], claimedAt, dead),
        await mustClaim(store, evs[1], claimedAt, dead),
      ];
      await mustClaim(store, evs[2], claimedAt, alive);
      await mustClaim(store, evs[3], claimedAt, gone); // `gone` has no node row: it left, or never registered
      // Neither the claims' own leases nor the dead owner's claim lease keep its events.
      await store.claimLeaseRenew({ owner: dead, leaseUntil: (await now(store)) + LONG_LEASE_MS });
      await heartbeat(store, dead);
      const lease = await mustElect(store, OWNER_A);
      const ttlMs = 1_000;
      const young = {
        leaderId: OWNER_A,
        epoch: lease.epoch,
        owners: [dead, alive, gone],
        nodeTtlMs: ttlMs,
        now: await now(store),
        limit: 100,
      };

      assert.deepEqual(await store.eventRescueDead(young), [], 'a heartbeat younger than nodeTtlMs keeps the claims');
      await ctx.time.pass(store, ttlMs);
      const aged = (await nodes(store)).find((x) => x.id === dead);
      assert.ok(aged && aged.ageMs >= ttlMs, 'the dead node’s heartbeat aged past the ttl');
      await heartbeat(store, alive);
      // Rescued events are due at `now`, also the cluster time the lease and heartbeats are judged at.
      const params = { ...young, now: await now(store) };
      assert.equal(await store.eventRescueDead({ ...params, leaderId: OWNER_B }), null, 'not the leader');
      assert.equal(await store.eventRescueDead({ ...params, epoch: lease.epoch + 1 }), null, 'not its epoch');
      assert.equal((await mustGet(store, tenantId, 'd1')).state, 'executing', 'a refused rescue changes nothing');

      const refs = await store.eventRescueDead(params);
      assert.deepEqual(refs?.map((r) => [r.id, r.version, r.dueAt]).sort(), [
        ['d1', d1.version + 1, params.now],
        ['d2', d2.version + 1, params.now],
      ]);
      const rescued = await mustGet(store, tenantId, 'd1');
      assert.deepEqual(
        [rescued.state, rescued.dueAt, rescued.leaseOwner, rescued.leaseUntil],
        ['awaiting_retry', params.now, null, null],
      );
      const trace = await store.transitionList({ tenantId, eventId: 'd1', limit: 10 });
      assert.deepEqual(trace.at(-1)?.detail, { reason: 'owner dead', owner: dead });
      assert.equal(
        (await mustGet(store, tenantId, 'a1')).state,
        'executing',
        'a node that heart-beat keeps its claims',
      );
      assert.equal(
        (await mustGet(store, tenantId, 'g1')).state,
        'executing',
        'an owner without a node row is left to its lease',
      );

      const [late] = await store.eventRecordAttempts({
        outcomes: [outcome(d1, 'succeeded', { owner: dead })],
        now: params.now + 1,
      });
      assert.equal(late, false, 'a late outcome of the dead owner does not apply after the rescue');
      assert.equal((await mustGet(store, tenantId, 'd1')).state, 'awaiting_retry');
      const due = await store.eventListDue({ shards: [0], after: null, untilMs: params.now, limit: 10 });
      assert.deepEqual(due.map((r) => r.id).sort(), ['d1', 'd2'], 'due now, for whoever owns the shard next');
      assert.deepEqual(await store.eventRescueDead(params), [], 'nothing twice');
      await resign(store, OWNER_A, lease.epoch);
      assert.equal(
        await store.eventRescueDead({ ...params, now: await now(store) }),
        null,
        'a resigned leader rescues nothing',
      );
    });
  });
}
