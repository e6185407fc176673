/**
 * Belfry on Citus through its API: the test harness's cluster (test/support/citus.ts) starts with
 * both workers; two nodes on one store distributed there (`citus=true` in the store URL) split
 * the shards and fire what either node took in: none early, in group order, none twice; an event
 * canceled through one node is canceled through the other, and a trace reads through either. Skipped, with the reason, where Citus
 * is not installed (never in CI: BELFRY_REQUIRE_CITUS=1).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { CITUS_WORKERS, citusSkip, startCitus } from '../support/citus.ts';
import { startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';

describe('Citus test cluster', { skip: citusSkip() }, () => {
  it('starts a coordinator with its workers active', async () => {
    const db = new pg.Client({ connectionString: await startCitus() });
    await db.connect();
    try {
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM citus_get_active_worker_nodes()');
      assert.equal(rows[0].n, CITUS_WORKERS);
      assert.equal(CITUS_WORKERS, 2);
    } finally {
      await db.end();
    }
  });
});

describe('two nodes on a store distributed on Citus', { skip: citusSkip() }, () => {
  const schema = `belfry_it_${randomBytes(4).toString('hex')}`;
  let coordinator: string;
  let a: TestNode;
  let b: TestNode;
  let rx: Receiver;

  before(async () => {
    coordinator = await startCitus();
    const store = `${coordinator}?schema=${schema}&citus=true`;
    rx = await startReceiver({ behavior: () => ({ status: 200 }) });
    a = await startTestNode({ store, nodeId: 'node-a' });
    b = await startTestNode({ store, nodeId: 'node-b' });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await rx?.close();
    const db = new pg.Client({ connectionString: coordinator });
    await db.connect();
    await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await db.end();
  });

  it('fires what either node took in on its owner: none early, groups in order, none twice; cancels and traces through either', async () => {
    await waitUntil(
      'each node owns 128 shards',
      () => a.node.cluster!.ownership.shards().length === 128 && b.node.cluster!.ownership.shards().length === 128,
      30_000,
      50,
    );
    assert.equal((await a.api('PUT', '/v1/destinations/rx', { url: rx.url, maxConcurrency: 50 })).status, 201);
    const fireAt = Date.now() + 2_000;
    const loose = Array.from({ length: 40 }, (_, i) => ({ id: `loose-${i}`, fireAt, destination: 'rx', payload: {} }));
    assert.equal((await a.api('POST', '/v1/events/batch', { events: loose })).status, 200);
    // One group through the other node (as the same tenant), created out of order: it fires by fireAt.
    for (const [id, at] of [
      ['g-3', fireAt + 300],
      ['g-1', fireAt + 100],
      ['g-2', fireAt + 200],
    ] as const)
      assert.equal(
        (
          await b.api(
            'POST',
            '/v1/events',
            { id, fireAt: at, destination: 'rx', group: 'order-1', payload: {} },
            a.tenantKey,
          )
        ).status,
        201,
      );
    // Canceled through the other node, long before it is due (a loaded machine may take seconds
    // over the requests above), and seen canceled through the first.
    assert.equal(
      (
        await b.api(
          'POST',
          '/v1/events',
          { id: 'doomed', fireAt: Date.now() + 600_000, destination: 'rx', payload: {} },
          a.tenantKey,
        )
      ).status,
      201,
    );
    assert.equal((await a.api('DELETE', '/v1/events/doomed')).status, 200);
    assert.equal((await b.api('GET', '/v1/events/doomed', undefined, a.tenantKey)).body.state, 'canceled');
    // The same id again with another body through the other node: refused, whatever its shard.
    const again = await b.api(
      'POST',
      '/v1/events',
      { id: 'g-1', fireAt, destination: 'rx', payload: { other: 1 } },
      a.tenantKey,
    );
    assert.equal(again.status, 409);

    await waitUntil('every live event delivered', () => new Set(ids()).size >= 43, 20_000, 20);
    const arrived = ids();
    assert.equal(arrived.length, new Set(arrived).size, 'none twice');
    assert.deepEqual(
      arrived.filter((id) => id.startsWith('g-')),
      ['g-1', 'g-2', 'g-3'],
      'the group in fireAt order',
    );
    for (const r of rx.requests) {
      const due = r.headers['webhook-id']?.toString().startsWith('g-')
        ? fireAt + 100 * Number(String(r.headers['webhook-id']).slice(2))
        : fireAt;
      assert.ok(r.receivedAt >= due, `${r.headers['webhook-id']} arrived ${due - r.receivedAt} ms early`);
    }
    // The trace of an event created through node-a, read through node-b.
    const trace = await b.api('GET', '/v1/events/loose-7/transitions', undefined, a.tenantKey);
    assert.equal(trace.status, 200);
    assert.deepEqual(
      trace.body.transitions.map((t: { toState: string }) => t.toState),
      ['scheduled', 'executing', 'succeeded'],
    );
  });

  it('refuses a store URL whose citus parameter is neither true nor false, naming it', async () => {
    await assert.rejects(
      startTestNode({ store: `${coordinator}?schema=${schema}&citus=yes`, nodeId: 'node-c' }),
      /citus=yes in the PostgreSQL URL must be true or false/,
    );
  });

  function ids(): string[] {
    return rx.requests.map((r) => String(r.headers['webhook-id']));
  }
});
