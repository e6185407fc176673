/**
 * Failover rescue on the real PostgreSQL: a node process is SIGKILLed while its deliveries hang
 * at the receiver (its events stay `executing` under it, leased for 15 s). The survivor, leading,
 * makes them due again as it moves the dead node's shards, and fires them within seconds, not
 * when the leases end; its own hanging deliveries, of a node alive and heart-beating, are never
 * rescued.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shardOf } from '../../src/core/shard.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { ADMIN_KEY, startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { killNodeProcess, startNodeProcess, type NodeProcess } from '../support/process.ts';
import { dropTestSchema, TEST_PG_URL as PG_URL } from '../support/pg.ts';

const SHARDS = 256;
const PER_NODE = 10;
/** The claim lease (15 s) is what the rescue beats; shards move ~3 s after the kill. */
const REFIRE_MS_MAX = 8_000;

describe('failover on PostgreSQL: a killed node’s claims fire again when its shards move', () => {
  const schema = `belfry_fo_${randomBytes(4).toString('hex')}`;
  const store = `${PG_URL}?schema=${schema}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-fo-'));
  let survivor: TestNode;
  let victim: NodeProcess;
  let rx: Receiver;
  const seen = new Set<string>();

  before(async () => {
    // The first delivery of each event hangs (the request stays open); any later one succeeds.
    rx = await startReceiver({
      behavior: (req) => {
        const id = String(req.headers['webhook-id']);
        if (seen.has(id)) return { status: 200 };
        seen.add(id);
        return { status: 200, hang: true };
      },
    });
    survivor = await startTestNode({ store, nodeId: 'survivor' });
    victim = await startNodeProcess([
      '--store',
      store,
      '--node-id',
      'victim',
      '--admin-key',
      ADMIN_KEY,
      '--allow-hosts',
      '127.0.0.1',
      '--data',
      dataDir,
      '--log-level',
      'info',
    ]);
  });
  after(async () => {
    if (victim) await killNodeProcess(victim);
    await rx?.close();
    await survivor?.close();
    await dropTestSchema(schema);
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Ids of events whose shards `owner` holds, PER_NODE of them. */
  async function idsOwnedBy(owner: string, map: Map<number, string>): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; ids.length < PER_NODE; i++) {
      const id = `${owner}-${i}`;
      if (map.get(shardOf(survivor.tenantId, id, SHARDS)) === owner) ids.push(id);
    }
    return ids;
  }

  it('re-fires the dead node’s in-flight events seconds after the kill, and keeps the live node’s claims', {
    timeout: 60_000,
  }, async () => {
    const { store: db } = survivor.node;
    await waitUntil(
      'both nodes own 128 shards',
      async () => {
        const owners = (await db.shardList()).map((a) => a.nodeId);
        return (
          owners.filter((n) => n === 'victim').length === 128 && owners.filter((n) => n === 'survivor').length === 128
        );
      },
      20_000,
      100,
    );
    assert.equal((await db.leaderGet())?.nodeId, 'survivor', 'the survivor, started first, leads');
    assert.equal((await survivor.api('PUT', '/v1/destinations/rx', { url: rx.url, timeout: '60s' })).status, 201);
    const map = new Map((await db.shardList()).map((a) => [a.shard, a.nodeId]));
    const victims = await idsOwnedBy('victim', map);
    const keeps = await idsOwnedBy('survivor', map);
    const events = [...victims, ...keeps].map((id) => ({ id, destination: 'rx', payload: { id } }));
    assert.equal((await survivor.api('POST', '/v1/events/batch', { events })).status, 200);
    await rx.waitFor(() => events.every((e) => seen.has(e.id)), 15_000);
    for (const id of victims)
      assert.equal((await db.eventGet({ tenantId: survivor.tenantId, id }))?.leaseOwner, 'victim');

    const killedAt = Date.now();
    await killNodeProcess(victim);
    const secondOf = (id: string) => rx.requests.filter((r) => r.headers['webhook-id'] === id)[1];
    await rx.waitFor(() => victims.every((id) => secondOf(id) !== undefined), 20_000);
    const refireMs = Math.max(...victims.map((id) => secondOf(id).receivedAt)) - killedAt;
    console.log(
      `failover rescue: ${victims.length} in-flight events of the killed node delivered again ${refireMs} ms after the kill`,
    );
    assert.ok(refireMs <= REFIRE_MS_MAX, `re-fired ${refireMs} ms after the kill`);

    for (const id of victims) {
      const trace = (await survivor.api('GET', `/v1/events/${id}/transitions`)).body.transitions as {
        detail?: { reason?: string; owner?: string };
      }[];
      assert.ok(
        trace.some((t) => t.detail?.reason === 'owner dead' && t.detail.owner === 'victim'),
        `${id} was rescued as a dead owner's claim`,
      );
    }
    for (const id of keeps) {
      const e = await db.eventGet({ tenantId: survivor.tenantId, id });
      assert.deepEqual(
        [e?.state, e?.leaseOwner],
        ['executing', 'survivor'],
        `${id}: a live node's claim is never rescued`,
      );
      assert.equal(rx.requests.filter((r) => r.headers['webhook-id'] === id).length, 1);
    }
  });
});
