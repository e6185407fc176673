/**
 * Retention end to end on real nodes: a tenant's own periods set through the admin API, events
 * delivered, discarded, canceled and still scheduled, and the cleaner of the node (SQLite), or of
 * the leader only (two nodes on PostgreSQL), deleting exactly the finished events past their
 * period, with their traces. The node's cleaner runs every 100 ms; the test waits on conditions
 * with deadlines.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { ADMIN_KEY, startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { dropTestSchema, TEST_PG_URL as PG_URL } from '../support/pg.ts';
import { scrapeMetrics } from '../support/metrics.ts';

const CLEANER = { cleaner: { intervalMs: 100 } };

/** The value of one sample of the node's /metrics, 0 when absent. */
async function metric(n: TestNode, sample: string): Promise<number> {
  return (await scrapeMetrics(n.url)).get(sample) ?? 0;
}

/** Schedules one event of each fate through `n` and waits until the finished ones have finished. */
async function scheduleEach(n: TestNode, rx: Receiver): Promise<void> {
  for (const [name, path] of [
    ['ok', '/ok'],
    ['bad', '/bad'],
  ]) {
    assert.equal((await n.api('PUT', `/v1/destinations/${name}`, { url: rx.url + path })).status, 201);
  }
  const patched = await n.api(
    'PATCH',
    `/v1/tenants/${n.tenantId}`,
    { retention: { succeeded: '1s', canceled: '1s' } },
    ADMIN_KEY,
  );
  assert.equal(patched.status, 200, JSON.stringify(patched.body));
  assert.deepEqual(patched.body.retention, { succeeded: '1s', canceled: '1s', discarded: '30d', archived: '30d' });
  for (const [id, destination, delay] of [
    ['delivered', 'ok', 0],
    ['refused', 'bad', 0],
    ['canceled', 'ok', '1h'],
    ['later', 'ok', '1h'],
  ]) {
    assert.equal((await n.api('POST', '/v1/events', { id, destination, delay, payload: { id } })).status, 201);
  }
  assert.equal((await n.api('DELETE', '/v1/events/canceled')).status, 200);
  await rx.waitFor((reqs) => reqs.length >= 2, 15_000);
  await waitUntil(
    'both fired events finished',
    async () => (await n.api('GET', '/v1/events/refused')).body.state === 'discarded',
    15_000,
  );
}

/** Waits until the events past their period are gone, then checks what is left. */
async function expectCleaned(n: TestNode): Promise<void> {
  await waitUntil(
    'the delivered and the canceled events deleted',
    async () =>
      (await n.api('GET', '/v1/events/delivered')).status === 404 &&
      (await n.api('GET', '/v1/events/canceled')).status === 404,
    20_000,
    50,
  );
  assert.equal((await n.api('GET', '/v1/events/delivered/transitions')).status, 404, 'the trace is gone too');
  assert.equal(
    (await n.api('GET', '/v1/events/refused')).body.state,
    'discarded',
    'discarded: kept 30 days by default',
  );
  assert.ok((await n.api('GET', '/v1/events/refused/transitions')).body.transitions.length >= 3);
  assert.equal((await n.api('GET', '/v1/events/later')).body.state, 'scheduled');
  // The id is free again: the same request creates a new event.
  assert.equal(
    (
      await n.api('POST', '/v1/events', {
        id: 'delivered',
        destination: 'ok',
        delay: '1h',
        payload: { id: 'delivered' },
      })
    ).status,
    201,
  );
}

describe('retention on a node on SQLite', () => {
  let n: TestNode;
  let rx: Receiver;
  before(async () => {
    rx = await startReceiver({ behavior: (req) => ({ status: req.path === '/ok' ? 200 : 400 }) });
    n = await startTestNode({}, CLEANER);
  });
  after(async () => {
    await n?.close();
    await rx?.close();
  });

  it("deletes the tenant's finished events past its periods, with their traces, and nothing else", async () => {
    await scheduleEach(n, rx);
    await expectCleaned(n);
    assert.equal(await metric(n, 'belfry_retention_deleted_total{table="events",state="succeeded"}'), 1);
    assert.equal(await metric(n, 'belfry_retention_deleted_total{table="events",state="canceled"}'), 1);
    // Its trace is created, executing, succeeded: two rows (`created` is read from the event row).
    assert.equal(await metric(n, 'belfry_retention_deleted_total{table="transitions",state="succeeded"}'), 2);
    assert.ok((await metric(n, 'belfry_retention_last_pass_timestamp_seconds')) > Date.now() / 1_000 - 60);
  });
});

describe('retention on two nodes on PostgreSQL: the leader cleans', () => {
  const schema = `belfry_it_${randomBytes(4).toString('hex')}`;
  let a: TestNode;
  let b: TestNode;
  let rx: Receiver;
  before(async () => {
    rx = await startReceiver({ behavior: (req) => ({ status: req.path === '/ok' ? 200 : 400 }) });
    a = await startTestNode({ store: `${PG_URL}?schema=${schema}`, nodeId: 'node-a' }, CLEANER);
    b = await startTestNode({ store: `${PG_URL}?schema=${schema}`, nodeId: 'node-b' }, CLEANER);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await rx?.close();
    await dropTestSchema(schema);
  });

  it('deletes them once, from the leader only', async () => {
    // Each test node made a tenant of its own; a's is used through either node.
    await scheduleEach(a, rx);
    await expectCleaned(a);
    const leaderId = (await a.api('GET', '/v1/cluster', undefined, ADMIN_KEY)).body.leader.nodeId as string;
    const [leader, follower] = leaderId === 'node-a' ? [a, b] : [b, a];
    assert.equal(await metric(leader, 'belfry_retention_deleted_total{table="events",state="succeeded"}'), 1);
    assert.equal(await metric(follower, 'belfry_retention_deleted_total{table="events",state="succeeded"}'), 0);
    assert.equal(await metric(follower, 'belfry_retention_last_pass_timestamp_seconds'), 0, 'a follower runs no pass');
  });
});
