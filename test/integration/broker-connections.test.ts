/**
 * Broker connections are pooled per destination: one connection however many deliveries, closed
 * when the destination is deleted or changed. Checked on a redis-server of the test's own, where
 * every client in CLIENT LIST named `belfry` is the node's.
 */
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { after, before, describe, it } from 'node:test';
import { startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { startOwnRedis, type OwnServer } from '../support/own-servers.ts';

describe('broker connections per destination', () => {
  let t: TestNode;
  let server: OwnServer;
  let admin: Redis;
  before(async () => {
    [t, server] = await Promise.all([startTestNode(), startOwnRedis()]);
    admin = new Redis({ port: server.port, host: '127.0.0.1' });
  });
  after(async () => {
    admin?.disconnect();
    await t?.close();
    await server?.remove();
  });

  const belfryClients = async () =>
    String(await admin.client('LIST'))
      .split('\n')
      .filter((l) => / name=belfry /.test(` ${l} `)).length;

  async function deliverAll(destination: string, ids: string[]): Promise<void> {
    for (const id of ids)
      assert.equal((await t.api('POST', '/v1/events', { id, delay: 0, destination, payload: { id } })).status, 201);
    await waitUntil(
      `${ids.length} events delivered`,
      async () => {
        const states = await Promise.all(ids.map(async (id) => (await t.api('GET', `/v1/events/${id}`)).body.state));
        return states.every((s) => s === 'succeeded');
      },
      10_000,
    );
  }

  it('shares one connection per destination, and closes it when the destination is changed or deleted', async () => {
    const url = `redis://127.0.0.1:${server.port}`;
    assert.equal(
      (await t.api('PUT', '/v1/destinations/pooled', { kind: 'redis', url, stream: 'belfry-pool-a' })).status,
      201,
    );
    await deliverAll(
      'pooled',
      Array.from({ length: 20 }, (_, i) => `pool-a-${i}`),
    );
    assert.equal(await belfryClients(), 1, '20 deliveries, one connection');

    assert.equal(
      (await t.api('PUT', '/v1/destinations/pooled', { kind: 'redis', url, stream: 'belfry-pool-b' })).status,
      200,
    );
    await waitUntil('the old connection closed on change', async () => (await belfryClients()) === 0, 5_000);
    await deliverAll('pooled', ['pool-b-0', 'pool-b-1']);
    assert.equal(await belfryClients(), 1, 'a new connection for the new target');
    assert.equal(await admin.xlen('belfry-pool-b'), 2);

    assert.equal((await t.api('DELETE', '/v1/destinations/pooled')).status, 204);
    await waitUntil('the connection closed on delete', async () => (await belfryClients()) === 0, 5_000);
  });
});
