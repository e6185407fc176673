/**
 * Two nodes in this process on one real PostgreSQL schema: shards split between them, both fire,
 * GET /v1/cluster shows it, and clocks that are 5 s wrong neither fire early nor break leases
 * (decisions use the database clock).
 *
 * The lateness bound is a timing assertion: it runs in the slow suite, one file at a time (beside
 * another test file it reached 1.6 s, p50 137 ms, on a machine where it is 12 ms alone).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { SystemClock } from '../../src/core/clock.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { ADMIN_KEY, startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { dropTestSchema, TEST_PG_URL as PG_URL } from '../support/pg.ts';

/**
 * Bound on an event's lateness in a steady two-node cluster. Events fire milliseconds late here
 * (p50 12 ms, max 200 ms on 2026-11-27), each on the node that owns its shard, which hears of the
 * events written through the other node by a wake-up. The bound leaves room for a loaded CI
 * machine and stays well inside the 5 s within which firing must resume even after a node dies;
 * events a node missed would be found by its overdue sweep, seconds late, past it.
 */
const LATENESS_MS_MAX = 1_000;

describe('two nodes on PostgreSQL, clocks 5 s off either way', () => {
  const schema = `belfry_it_${randomBytes(4).toString('hex')}`;
  const store = `${PG_URL}?schema=${schema}`;
  let a: TestNode;
  let b: TestNode;
  let rx: Receiver;

  before(async () => {
    rx = await startReceiver({ behavior: () => ({ status: 200 }) });
    // A's clock runs 5 s ahead, B's 5 s behind: the store's clock must decide for both.
    a = await startTestNode({ store, nodeId: 'node-ahead' }, { clock: new SystemClock(5_000) });
    b = await startTestNode({ store, nodeId: 'node-behind' }, { clock: new SystemClock(-5_000) });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await rx?.close();
    await dropTestSchema(schema);
  });

  it('splits the shards between the nodes and reports the cluster', async () => {
    await waitUntil(
      'two nodes with 128 shards each',
      async () => {
        const c = (await a.api('GET', '/v1/cluster', undefined, ADMIN_KEY)).body;
        return c.nodes.filter((n: { live: boolean; shards: number }) => n.live && n.shards === 128).length === 2;
      },
      15_000,
      100,
    );
    const c = (await b.api('GET', '/v1/cluster', undefined, ADMIN_KEY)).body;
    assert.equal(c.mode, 'cluster');
    assert.equal(c.nodeId, 'node-behind');
    assert.equal(c.shardCount, 256);
    assert.equal(c.unassignedShards, 0);
    assert.ok(c.leader && c.leader.epoch >= 1 && ['node-ahead', 'node-behind'].includes(c.leader.nodeId));
    // Each node measured its skew against the database: about +5 s of correction for B, -5 s for A.
    assert.ok(Math.abs(c.clockSkewMs - 5_000) < 1_000, `B's skew ${c.clockSkewMs}`);
    assert.equal((await a.api('GET', '/v1/cluster')).status, 403, 'a tenant key must not see the cluster');
    assert.equal((await a.api('GET', '/readyz')).status, 200);
  });

  it('fires every event on time from both nodes, none early', async () => {
    const put = await a.api('PUT', '/v1/destinations/rx', { url: rx.url, maxConcurrency: 50 });
    assert.equal(put.status, 201, JSON.stringify(put.body));
    const fireAt = Date.now() + 2_000;
    const events = Array.from({ length: 400 }, (_, i) => ({
      id: `c-${i}`,
      fireAt: fireAt + i * 5,
      destination: 'rx',
      payload: { fireAt: fireAt + i * 5 },
    }));
    const res = await a.api('POST', '/v1/events/batch', { events });
    assert.equal(res.status, 200);
    await rx.waitFor((reqs) => new Set(reqs.map((r) => r.headers['webhook-id'])).size >= 400, 20_000);
    const early = rx.requests.filter((r) => r.receivedAt < (r.json as { fireAt: number }).fireAt);
    assert.equal(early.length, 0, `${early.length} events fired early`);
    // Which node fired each event is in its trace.
    const owners = new Set<string>();
    for (const e of events.slice(0, 100)) {
      const trace = (await a.api('GET', `/v1/events/${e.id}/transitions`)).body.transitions;
      owners.add(trace.find((t: { toState: string }) => t.toState === 'executing').detail.owner);
    }
    assert.deepEqual([...owners].sort(), ['node-ahead', 'node-behind']);
    const lateness = rx.requests.map((r) => r.receivedAt - (r.json as { fireAt: number }).fireAt).sort((x, y) => x - y);
    console.log(
      `cluster on PostgreSQL: lateness p50 ${lateness[Math.floor(lateness.length / 2)]} ms, max ${lateness[lateness.length - 1]} ms`,
    );
    assert.ok(
      lateness[lateness.length - 1] <= LATENESS_MS_MAX,
      `max lateness ${lateness[lateness.length - 1]} ms, bound ${LATENESS_MS_MAX} ms`,
    );
  });
});
