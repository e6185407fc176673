/**
 * The cluster roles together (membership, elector, shard ownership) for several simulated nodes
 * on one real store, on a simulated clock (SQLite judges leases and heartbeats by the caller's
 * `now`, so TTLs pass without waiting): election, even shard spread, failover when a node dies or
 * leaves, a paused node giving up its shards before anyone else may own them, and the claims of a
 * dead node made due again as its shards move (never those of a node still heart-beating).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { SimClock } from '../core/clock.ts';
import { insertAll, newEvent, newTenant } from '../store/conformance/fixtures.ts';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/sqlite-store.ts';
import { Elector } from './elector.ts';
import { Membership } from './membership.ts';
import { ShardOwnership } from './shard-ownership.ts';

const SHARDS = 64;
const TTL_MS = 400;
const logger = pino({ level: 'silent' });
const clock = new SimClock(Date.now());
/** Simulated ms per step of waitUntil: the roles' loops run between two steps. */
const STEP_MS = 10;

/**
 * Advances the simulated clock step by step, letting the roles' loops run after each, until
 * `predicate` holds; fails once `simMs` of simulated time passed without it.
 */
async function waitUntil(what: string, predicate: () => boolean | Promise<boolean>, simMs: number): Promise<void> {
  for (let passedMs = 0; ; passedMs += STEP_MS) {
    if (await predicate()) return;
    if (passedMs >= simMs) throw new Error(`still waiting for ${what} after ${simMs} simulated ms`);
    await clock.advance(STEP_MS);
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
  }
}

interface SimNode {
  id: string;
  membership: Membership;
  elector: Elector;
  ownership: ShardOwnership;
  /** Every change of owned shards, with the time it was seen. */
  changes: { atMs: number; owned: number[] }[];
}

function makeNode(store: SqliteStore, id: string): SimNode {
  const membership = new Membership(
    { store, clock, nodeId: id, logger, meta: {} },
    { heartbeatIntervalMs: 50, nodeTtlMs: TTL_MS, safetyMs: 100 },
  );
  const elector = new Elector(
    {
      store,
      clock,
      nodeId: id,
      logger,
      reachableForMs: () => membership.reachableForMs(),
      mayLead: () => membership.isAlive(),
    },
    { intervalMs: 50, leaseMs: TTL_MS, nodeTtlMs: TTL_MS, shardCount: SHARDS },
  );
  const changes: SimNode['changes'] = [];
  const ownership = new ShardOwnership(
    { store, clock, nodeId: id, membership, logger, onChange: (owned) => changes.push({ atMs: clock.now(), owned }) },
    25,
  );
  membership.start();
  elector.start();
  ownership.start();
  return { id, membership, elector, ownership, changes };
}

/** Stops a node's loops as a SIGKILL would: no goodbye, no resignation. */
async function kill(n: SimNode): Promise<void> {
  await Promise.all([n.membership.stop(false), n.ownership.stop()]);
  // Stop the elector without resigning: drop its lease knowledge first.
  (n.elector as unknown as { lease: null }).lease = null;
  await n.elector.stop();
}

async function ownerMap(store: SqliteStore): Promise<Map<number, string>> {
  return new Map((await store.shardList()).map((a) => [a.shard, a.nodeId]));
}

function spreadOk(map: Map<number, string>, live: string[]): boolean {
  if (map.size !== SHARDS) return false;
  const counts = live.map((id) => [...map.values()].filter((n) => n === id).length);
  return [...map.values()].every((n) => live.includes(n)) && Math.max(...counts) - Math.min(...counts) <= 1;
}

describe('cluster roles', () => {
  let dir: string;
  let store: SqliteStore;
  const nodes: SimNode[] = [];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'belfry-cluster-'));
    store = await openSqliteStore({ dataDir: dir });
  });
  after(async () => {
    for (const n of nodes) await kill(n).catch(() => {});
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('elects one leader and spreads shards evenly over three nodes', async () => {
    nodes.push(makeNode(store, 'a'), makeNode(store, 'b'), makeNode(store, 'c'));
    await waitUntil('balanced map', async () => spreadOk(await ownerMap(store), ['a', 'b', 'c']), 5_000);
    await waitUntil('every node sees its shards', () => nodes.every((n) => n.ownership.shards().length >= 21), 5_000);
    assert.equal(nodes.filter((n) => n.elector.isLeader).length, 1);
    const owned = nodes.flatMap((n) => n.ownership.shards());
    assert.equal(new Set(owned).size, SHARDS, 'a shard is owned twice or not at all');
  });

  it('moves a dead leader’s shards to the others, under a new epoch, and the dead node had stopped first', async () => {
    const leader = nodes.find((n) => n.elector.isLeader)!;
    const epochBefore = leader.elector.epoch!;
    const hisShards = leader.ownership.shards();
    const killedAt = clock.now();
    await kill(leader);
    const rest = nodes.filter((n) => n !== leader && n.membership.isAlive());
    await waitUntil(
      'failover seen by the survivors',
      async () =>
        spreadOk(
          await ownerMap(store),
          rest.map((n) => n.id),
        ) && hisShards.every((s) => rest.some((n) => n.ownership.has(s))),
      5_000,
    );
    const newLeader = rest.find((n) => n.elector.isLeader);
    assert.ok(newLeader, 'no new leader');
    assert.ok(newLeader.elector.epoch! > epochBefore);
    const takenAt = Math.min(
      ...rest.flatMap((n) =>
        n.changes.filter((c) => c.atMs >= killedAt && c.owned.some((s) => hisShards.includes(s))).map((c) => c.atMs),
      ),
    );
    assert.ok(takenAt - killedAt < 5_000);
    console.log(
      `cluster roles: shards of a killed leader reassigned ${takenAt - killedAt} ms after the kill (ttl ${TTL_MS} ms)`,
    );
  });

  it('a paused node stops owning its shards before another node owns them', async () => {
    const [victim, other] = nodes.filter((n) => n.membership.isAlive());
    const victimShards = victim.ownership.shards();
    assert.ok(victimShards.length > 0);
    // Its heartbeats stop reaching the store (a partition), but the node keeps running.
    await victim.membership.stop(false);
    await waitUntil('takeover', () => victimShards.every((s) => other.ownership.has(s)), 5_000);
    const victimGaveUp = victim.changes.find((c) => c.owned.length === 0)?.atMs;
    const otherTook = other.changes.find((c) => victimShards.some((s) => c.owned.includes(s)))!.atMs;
    assert.ok(victimGaveUp !== undefined, 'the paused node never gave up its shards');
    assert.ok(victimGaveUp <= otherTook, `paused node gave up at ${victimGaveUp}, another took over at ${otherTook}`);
    assert.deepEqual(victim.ownership.shards(), []);
  });

  it('a node that leaves hands its shards back at once; a new node gets a fair share', async () => {
    const d = makeNode(store, 'd');
    nodes.push(d);
    const live = () => nodes.filter((n) => n.membership.isAlive()).map((n) => n.id);
    await waitUntil('d joins', async () => live().includes('d') && spreadOk(await ownerMap(store), live()), 5_000);
    const leaving = nodes.find((n) => n.membership.isAlive() && n.id !== 'd')!;
    const leftAt = clock.now();
    await Promise.all([leaving.membership.stop(true), leaving.ownership.stop(), leaving.elector.stop()]);
    await waitUntil('d owns everything', async () => spreadOk(await ownerMap(store), ['d']), 5_000);
    assert.ok(clock.now() - leftAt < TTL_MS, 'shards waited for the TTL instead of moving at once');
  });
});

describe('failover rescue', () => {
  let dir: string;
  let store: SqliteStore;
  const nodes: SimNode[] = [];
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'belfry-rescue-'));
    store = await openSqliteStore({ dataDir: dir });
  });
  after(async () => {
    for (const n of nodes) await kill(n).catch(() => {});
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('makes a dead node’s claims due again before its shards move, and never a live node’s', async () => {
    const [x, y] = [makeNode(store, 'x'), makeNode(store, 'y')];
    nodes.push(x, y);
    await waitUntil('balanced map', async () => spreadOk(await ownerMap(store), ['x', 'y']), 5_000);
    const tenantId = await newTenant(store);
    const now = clock.now();
    const evs = await insertAll(
      store,
      ['x1', 'x2', 'y1'].map((id) => newEvent(tenantId, id, { fireAt: now })),
      now,
    );
    const claim = (owner: string, ids: string[]) =>
      store.eventClaim({
        refs: evs.filter((e) => ids.includes(e.id)).map((e) => ({ tenantId, id: e.id, version: e.version })),
        now,
        owner,
        leaseUntil: now + 600_000,
      });
    assert.equal((await claim('x', ['x1', 'x2'])).length, 2);
    assert.equal((await claim('y', ['y1'])).length, 1);
    const state = async (id: string) => (await store.eventGet({ tenantId, id }))!.state;

    // Both alive through two TTLs of heartbeats (and the leader's passes): nothing is rescued.
    const since = (await store.nodeList({ now: clock.now() })).reduce((m, n) => Math.max(m, n.heartbeatAt), 0);
    await waitUntil(
      'two TTLs of heartbeats',
      async () => (await store.nodeList({ now: clock.now() })).every((n) => n.heartbeatAt > since + 2 * TTL_MS),
      5_000,
    );
    assert.deepEqual(await Promise.all(['x1', 'x2', 'y1'].map(state)), ['executing', 'executing', 'executing']);

    const xShards = x.ownership.shards();
    await kill(x);
    await waitUntil(
      'x’s shards moved and its claims due again',
      async () => spreadOk(await ownerMap(store), ['y']) && (await state('x1')) === 'awaiting_retry',
      5_000,
    );
    assert.equal(await state('x2'), 'awaiting_retry');
    assert.equal(await state('y1'), 'executing', 'the live node keeps its claim');
    const rescue = (await store.transitionList({ tenantId, eventId: 'x1', limit: 10 })).at(-1)!;
    assert.deepEqual(rescue.detail, { reason: 'owner dead', owner: 'x' });
    await waitUntil('y sees x’s shards', () => xShards.every((s) => y.ownership.has(s)), 5_000);
    const takenAt = y.changes.find((c) => xShards.some((s) => c.owned.includes(s)))!.atMs;
    assert.ok(rescue.at <= takenAt, `rescued at ${rescue.at}, after y took the shards at ${takenAt}`);
    const due = await store.eventListDue({ shards: null, after: null, untilMs: clock.now(), limit: 10 });
    assert.deepEqual(due.map((r) => r.id).sort(), ['x1', 'x2'], 'due now, for the new owner');
  });
});
