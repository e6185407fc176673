/**
 * Pull delivery on two nodes sharing one PostgreSQL schema: a claim on a node that does not own
 * an event's shard hands it out, an ack on the other node settles it, concurrent claims on both
 * nodes never hand out one event twice, and an expired claim comes back on either node.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ADMIN_KEY, startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { dropTestSchema, TEST_PG_URL as PG_URL } from '../support/pg.ts';

interface Claimed {
  id: string;
  receipt: string;
  attempt: number;
}

describe('pull delivery on two PostgreSQL nodes', () => {
  const schema = `belfry_it_${randomBytes(4).toString('hex')}`;
  const store = `${PG_URL}?schema=${schema}`;
  let a: TestNode;
  let b: TestNode;

  before(async () => {
    a = await startTestNode({ store, nodeId: 'pull-a' });
    b = await startTestNode({ store, nodeId: 'pull-b' });
    await waitUntil(
      'the shards split between the nodes',
      async () => {
        const c = (await a.api('GET', '/v1/cluster', undefined, ADMIN_KEY)).body;
        return c.nodes.filter((n: { live: boolean; shards: number }) => n.live && n.shards === 128).length === 2;
      },
      20_000,
      100,
    );
    assert.equal(
      (
        await a.api('PUT', '/v1/destinations/jobs', {
          kind: 'pull',
          retry: { minBackoff: '100ms', maxBackoff: '100ms' },
        })
      ).status,
      201,
    );
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await dropTestSchema(schema);
  });

  /** A call on `node` as node a's tenant (each test node made a tenant of its own). */
  const call = (node: TestNode, method: string, path: string, body?: unknown) =>
    node.api(method, path, body, a.tenantKey);
  const claim = async (node: TestNode, body: Record<string, unknown> = {}): Promise<Claimed[]> => {
    const res = await call(node, 'POST', '/v1/destinations/jobs/claim', { max: 100, ...body });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.events;
  };

  it('claims on a node events of shards it does not own, acks on the other node, never hands one event out twice', async () => {
    const events = Array.from({ length: 120 }, (_, i) => ({
      id: `c-${i}`,
      destination: 'jobs',
      delay: 0,
      payload: { i },
    }));
    assert.equal((await a.api('POST', '/v1/events/batch', { events })).status, 200);
    const got: { node: TestNode; e: Claimed }[] = [];
    await waitUntil(
      'every event claimed',
      async () => {
        const [fromA, fromB] = await Promise.all([claim(a, { max: 7 }), claim(b, { max: 7 })]);
        got.push(...fromA.map((e) => ({ node: a, e })), ...fromB.map((e) => ({ node: b, e })));
        return got.length >= events.length;
      },
      30_000,
      1,
    );
    const ids = got.map((x) => x.e.id);
    assert.equal(new Set(ids).size, ids.length, 'no event handed out twice');
    assert.equal(ids.length, events.length);

    // Shard owners from the shared map: each node handed out events of shards the other owns.
    const owners = new Map((await a.node.store.shardList()).map((s) => [s.shard, s.nodeId]));
    const foreign = async (node: TestNode, nodeId: string) => {
      let n = 0;
      for (const x of got.filter((y) => y.node === node)) {
        const e = await a.node.store.eventGet({ tenantId: a.tenantId, id: x.e.id });
        if (owners.get(e!.shard) !== nodeId) n += 1;
      }
      return n;
    };
    assert.ok((await foreign(a, 'pull-a')) > 0, "node a claimed events of node b's shards");
    assert.ok((await foreign(b, 'pull-b')) > 0, "node b claimed events of node a's shards");

    // Ack each on the node that did NOT claim it.
    for (const x of got) {
      const other = x.node === a ? b : a;
      const res = await call(other, 'POST', `/v1/events/${x.e.id}/ack`, { receipt: x.e.receipt });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }
    assert.equal(
      (await a.api('POST', `/v1/events/${got[0].e.id}/ack`, { receipt: got[0].e.receipt })).status,
      409,
      'already acked',
    );
  });

  it('an expired claim comes back, on either node', async () => {
    assert.equal((await call(b, 'POST', '/v1/events', { id: 'exp-1', destination: 'jobs', delay: 0 })).status, 201);
    let first: Claimed[] = [];
    await waitUntil(
      'claimed on a',
      async () => (first = await claim(a, { visibilityTimeout: '1s' })).length === 1,
      10_000,
    );
    let again: Claimed[] = [];
    await waitUntil(
      'claimable again after the expiry',
      async () => (again = await claim(b, { wait: '2s' })).length === 1,
      20_000,
    );
    assert.equal(again[0].id, 'exp-1');
    assert.equal(again[0].attempt, 2);
    assert.equal(
      (await call(b, 'POST', '/v1/events/exp-1/ack', { receipt: first[0].receipt })).status,
      409,
      'the expired receipt',
    );
    assert.equal((await call(a, 'POST', '/v1/events/exp-1/ack', { receipt: again[0].receipt })).status, 200);
  });
});
