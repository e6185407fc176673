/**
 * The elector's judgement of dead nodes, pass by pass on a real SQLite store, with this node's
 * reach of the store (Membership.reachableForMs) given by the test: a leader that has just
 * reached the store again moves no shard away from a silent node and rescues none of its claims;
 * once it has reached the store for half a TTL it moves the shards, and for a whole TTL it also
 * makes the silent node's claims due again, before the map moves. Cluster time is a SimClock's
 * (SQLite judges leases and heartbeats by the caller's `now`): a silent TTL passes without waiting.
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

const TTL_MS = 200;
const SHARDS = 8;

describe('elector: judging silent nodes', () => {
  let dir: string;
  let store: SqliteStore;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'belfry-elector-'));
    store = await openSqliteStore({ dataDir: dir });
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('moves a silent node’s shards only once it has reached the store for half a TTL, and rescues its claims only after a whole TTL', async () => {
    let reachMs = 60_000;
    const clock = new SimClock(Date.now());
    const heartbeat = (nodeId: string) => store.nodeHeartbeat({ nodeId, meta: {}, now: clock.now() });
    const elector = new Elector(
      {
        store,
        clock,
        nodeId: 'w',
        logger: pino({ level: 'silent' }),
        reachableForMs: () => reachMs,
      },
      { intervalMs: 50, leaseMs: 60_000, nodeTtlMs: TTL_MS, shardCount: SHARDS },
    );
    const owners = async () => new Set((await store.shardList()).map((a) => a.nodeId));
    await heartbeat('z');
    await heartbeat('w');
    assert.equal((await elector.runOnce()).moved, SHARDS);
    assert.deepEqual(await owners(), new Set(['w', 'z']));
    const tenantId = await newTenant(store);
    const [e] = await insertAll(store, [newEvent(tenantId, 'held-by-z', { fireAt: clock.now() })], clock.now());
    assert.equal(
      (
        await store.eventClaim({
          refs: [{ tenantId, id: e.id, version: e.version }],
          now: clock.now(),
          owner: 'z',
          leaseUntil: clock.now() + 600_000,
        })
      ).length,
      1,
    );
    const state = async () => (await store.eventGet({ tenantId, id: 'held-by-z' }))!.state;

    // z falls silent for a TTL; w keeps heart-beating.
    await clock.advance(TTL_MS);
    await heartbeat('w');
    assert.ok((await store.nodeList({ now: clock.now() })).find((n) => n.id === 'z')!.ageMs >= TTL_MS);

    reachMs = 0; // w has just reached the store again (after an outage, every heartbeat is old)
    assert.equal((await elector.runOnce()).moved, 0, 'a leader just back moves nothing away');
    assert.equal(await state(), 'executing');

    reachMs = TTL_MS / 2;
    assert.equal((await elector.runOnce()).moved, SHARDS / 2, 'half a TTL: z’s shards move');
    assert.deepEqual(await owners(), new Set(['w']));
    assert.equal(await state(), 'executing', 'but its claims wait for a whole TTL of reach');

    reachMs = TTL_MS;
    await elector.runOnce();
    assert.equal(await state(), 'awaiting_retry', 'a whole TTL: the claims of the shards it moved are due again');
  });
});
