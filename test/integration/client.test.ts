/**
 * The SDK (`belfry/client`, imported by its package name) against a real node started in this
 * process on SQLite in a temp dir: every route the client covers, a delivery verified with
 * verifyWebhook and de-duplicated (and a Redis stream entry by its belfry-event-id), a create and
 * a cancel retried after their answer was lost (one event, canceled once), real 429s waited out,
 * and the drift check between the client's route table and the API's OpenAPI document.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  BelfryApiError,
  BelfryClient,
  Deduplicator,
  deliveryId,
  NackError,
  ROUTES,
  verifyWebhook,
  type BelfryEvent,
  type BelfryClientOptions,
  type Operation,
} from '@belfry/client';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { startAnswerDroppingProxy } from '../support/answer-dropping-proxy.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { ADMIN_KEY, startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { PACKAGE_VERSION } from '../support/package.ts';

let node: TestNode;
let receiver: Receiver;
/** Every request any client of this file made: `METHOD /path` (no query). */
const requested: string[] = [];
const recordingFetch: typeof fetch = (input, init) => {
  const url = new URL(String(input));
  requested.push(`${init?.method ?? 'GET'} ${url.pathname}`);
  return fetch(input, init);
};

const client = (apiKey: string, extra: Partial<BelfryClientOptions> = {}) =>
  new BelfryClient({ baseUrl: node.url, apiKey, fetch: recordingFetch, ...extra });
let tenant: BelfryClient;
let admin: BelfryClient;

async function rejection(p: Promise<unknown>): Promise<BelfryApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof BelfryApiError, `a BelfryApiError, not ${String(err)}`);
    return err;
  }
  assert.fail('expected the call to fail');
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

async function waitForState(id: string, state: BelfryEvent['state']): Promise<BelfryEvent> {
  let last: BelfryEvent | undefined;
  await waitUntil(`event ${id} ${state}`, async () => (last = await tenant.events.get(id)).state === state, 10_000);
  return last!;
}

before(async () => {
  receiver = await startReceiver({ behavior: (req) => ({ status: req.path === '/refuse' ? 400 : 200 }) });
  node = await startTestNode();
  tenant = client(node.tenantKey);
  admin = client(ADMIN_KEY);
});
after(async () => {
  await node.close();
  await receiver.close();
});

describe('@belfry/client against a real node', () => {
  test('admin: tenants, their keys and signing secret, the cluster', async () => {
    const made = await admin.tenants.create({ name: 'sdk-admin', durability: 'strict' });
    assert.match(made.signingSecret, /^whsec_/);
    assert.ok((await admin.tenants.list()).some((t) => t.id === made.id));
    const patched = await admin.tenants.patch(made.id, {
      limits: { destinationsMax: 7 },
      retention: { succeeded: '2d' },
    });
    assert.equal(patched.limits.destinationsMax, 7);
    assert.equal(patched.retention.succeeded, '2d');
    assert.equal((await admin.tenants.get(made.id)).name, 'sdk-admin');

    const key = await admin.tenants.createKey(made.id);
    assert.equal((await client(key.key).destinations.list()).length, 0, 'the new key works');
    const rotated = await admin.tenants.rotateKey(made.id, key.id, { gracePeriod: '1m' });
    assert.equal(rotated.replaces, key.id);
    assert.deepEqual((await admin.tenants.listKeys(made.id)).map((k) => k.id).sort(), [key.id, rotated.id].sort());
    await admin.tenants.revokeKey(made.id, rotated.id);
    const revoked = await rejection(client(rotated.key).destinations.list());
    assert.equal(revoked.status, 401);

    assert.match((await admin.tenants.rotateSigningSecret(made.id)).secret, /^whsec_/);
    const cluster = await admin.tenants.cluster();
    assert.equal(cluster.mode, 'single');

    const forbidden = await rejection(tenant.tenants.list());
    assert.equal(forbidden.status, 403, 'a tenant key cannot call admin routes');
  });

  test("account: the tenant's own limits, keys and signing secret", async () => {
    const limits = await tenant.account.limits();
    assert.equal(typeof limits.batchEventsMax, 'number');
    const key = await tenant.account.createKey();
    assert.ok((await tenant.account.listKeys()).some((k) => k.id === key.id));
    const rotated = await tenant.account.rotateKey(key.id);
    await tenant.account.revokeKey(rotated.id);
    assert.ok((await tenant.account.listKeys()).find((k) => k.id === rotated.id)?.revokedAt);
    assert.match((await tenant.account.rotateSigningSecret({ gracePeriod: '1h' })).secret, /^whsec_/);
  });

  test('destinations: put, get, list, rotate the secret, delete; errors carry the API code', async () => {
    const made = await tenant.destinations.put('sdk-dest', { url: `${receiver.url}/ok`, timeout: '5s' });
    assert.match(made.secret!, /^whsec_/);
    assert.equal((await tenant.destinations.get('sdk-dest')).url, `${receiver.url}/ok`);
    assert.ok((await tenant.destinations.list()).some((d) => d.name === 'sdk-dest'));
    const health = await tenant.destinations.health('sdk-dest');
    assert.equal(health.name, 'sdk-dest');
    assert.equal(typeof health.nodeId, 'string');
    assert.equal(health.queue, null, 'nothing delivered to it yet: no queue on this node');
    const rotated = await tenant.destinations.rotateSecret('sdk-dest', { gracePeriod: '1m' });
    assert.notEqual(rotated.secret, made.secret);
    await tenant.destinations.delete('sdk-dest');
    const gone = await rejection(tenant.destinations.get('sdk-dest'));
    assert.equal(gone.status, 404);
    assert.equal(gone.code, 'not_found');

    const bad = await rejection(tenant.destinations.put('sdk-bad', { url: 'ftp://example.com' }));
    assert.equal(bad.status, 400);
    assert.ok(
      bad.details.some((d) => d.field === 'url'),
      JSON.stringify(bad.details),
    );
  });

  test('events: create (with and without an id), get, patch with If-Match, cancel, conflicts', async () => {
    await tenant.destinations.put('later', { url: `${receiver.url}/ok` });
    const made = await tenant.events.createWithOutcome({
      destination: 'later',
      delay: '1h',
      payload: { n: 1 },
      type: 'sdk.test',
    });
    assert.equal(made.created, true);
    assert.match(made.event.id, /^[0-9a-z]{26}$/, 'an id made by the client, time-sortable like the server’s');
    assert.equal(made.event.state, 'scheduled');
    const again = await tenant.events.createWithOutcome({
      id: made.event.id,
      destination: 'later',
      delay: '1h',
      payload: { n: 1 },
      type: 'sdk.test',
    });
    assert.equal(again.created, false, 'same id and body: the stored event');
    const conflict = await rejection(tenant.events.create({ id: made.event.id, destination: 'later', delay: '2h' }));
    assert.equal(conflict.status, 409);

    const fireAt = new Date(Date.now() + 7_200_000);
    const patched = await tenant.events.patch(
      made.event.id,
      { fireAt, payload: { n: 2 } },
      { ifMatch: made.event.version },
    );
    assert.equal(Date.parse(patched.fireAt), Math.floor(fireAt.getTime()));
    assert.deepEqual((await tenant.events.get(made.event.id)).payload, { n: 2 });
    const stale = await rejection(
      tenant.events.patch(made.event.id, { payload: { n: 3 } }, { ifMatch: made.event.version }),
    );
    assert.equal(stale.status, 412);

    const canceled = await tenant.events.cancel(made.event.id, { ifMatch: patched.version });
    assert.equal(canceled.state, 'canceled');
    const twice = await rejection(tenant.events.cancel(made.event.id));
    assert.equal(twice.status, 409);
  });

  test('events: batch, one result per item in order; the list and the trace page through with async iterators', async () => {
    const results = await tenant.events.batch([
      { id: 'sdk-b-1', destination: 'later', delay: '1h', group: 'sdk-list', type: 'sdk.list' },
      { destination: 'later', delay: '1h', group: 'sdk-list', type: 'sdk.list' },
      { destination: 'no such destination!', delay: '1h' },
      { destination: 'later', delay: '1h', group: 'sdk-list', type: 'sdk.list' },
      { destination: 'later', delay: '1h', group: 'sdk-list', type: 'sdk.list' },
      { destination: 'later', delay: '1h', group: 'sdk-list', type: 'sdk.list' },
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['created', 'created', 'error', 'created', 'created', 'created'],
    );
    assert.equal(results[0].event!.id, 'sdk-b-1');
    const ids = results.filter((r) => r.event).map((r) => r.event!.id);
    const minimal = await tenant.events.batch(
      [{ id: 'sdk-b-1', destination: 'later', delay: '1h', group: 'sdk-list', type: 'sdk.list' }],
      { minimal: true },
    );
    assert.deepEqual(minimal, [{ status: 'existing', id: 'sdk-b-1', version: 1 }]);

    const firstPage = await tenant.events.listPage({ group: 'sdk-list', limit: 2 });
    assert.equal(firstPage.events.length, 2);
    assert.ok(firstPage.nextCursor);
    const listed = await collect(
      tenant.events.list({ group: 'sdk-list', type: 'sdk.list', state: 'scheduled', limit: 2 }),
    );
    assert.deepEqual(listed.map((e) => e.id).sort(), [...ids].sort(), 'every event once, over 3 pages');
    const pages = requested.filter((r) => r === 'GET /v1/events').length;
    assert.ok(pages >= 4, `paged (${pages} list requests)`);

    for (let i = 0; i < 3; i++) await tenant.events.patch('sdk-b-1', { payload: { edit: i } });
    const firstTrace = await tenant.events.transitionsPage('sdk-b-1', { limit: 1 });
    assert.equal(firstTrace.transitions.length, 1);
    const trace = await collect(tenant.events.transitions('sdk-b-1', { limit: 1 }));
    assert.deepEqual(
      trace.map((t) => t.kind),
      ['created', 'updated', 'updated', 'updated'],
    );
    assert.deepEqual(
      trace.map((t) => t.seq),
      [...trace.map((t) => t.seq)].sort((a, b) => a - b),
    );
  });

  test('a delivery verifies with verifyWebhook and the destination secret; a replay is the same id, which dedup drops', async () => {
    const dest = await tenant.destinations.put('refusing', { url: `${receiver.url}/refuse` });
    const event = await tenant.events.create({
      destination: 'refusing',
      payload: { order: 8812 },
      type: 'order.timeout',
    });
    await waitForState(event.id, 'discarded');
    const replayed = await tenant.events.replay(event.id);
    assert.notEqual(replayed.state, 'discarded');
    await waitForState(event.id, 'discarded');

    const deliveries = receiver.requests.filter((r) => r.headers['webhook-id'] === event.id);
    assert.equal(deliveries.length, 2);
    const dedup = new Deduplicator();
    const handled: unknown[] = [];
    for (const d of deliveries) {
      const verified = verifyWebhook(dest.secret!, d.headers, d.body);
      assert.equal(verified.id, event.id);
      assert.deepEqual(verified.payload, { order: 8812 });
      await dedup.run(d.headers, () => handled.push(verified.payload));
    }
    assert.equal(handled.length, 1, 'the second delivery of the same id is dropped');
    assert.equal(deliveries[0].headers['belfry-type'], 'order.timeout');
  });

  test('a broker delivery (a Redis stream entry) carries belfry-event-id, which the same dedup helper drops on a second read', async () => {
    const stream = `belfry-test:sdk:${randomBytes(4).toString('hex')}`;
    const redis = new Redis({ host: '127.0.0.1', port: 6379, maxRetriesPerRequest: 1 });
    try {
      await tenant.destinations.put('sdk-stream', { kind: 'redis', url: 'redis://127.0.0.1:6379', stream });
      const event = await tenant.events.create({ destination: 'sdk-stream', payload: { n: 1 }, type: 'sdk.broker' });
      await waitUntil('the stream entry', async () => (await redis.xlen(stream)) > 0, 10_000);
      const [[, flat]] = await redis.xrange(stream, '-', '+');
      const fields: Record<string, string> = {};
      for (let i = 0; i < flat.length; i += 2) fields[flat[i]] = flat[i + 1];
      assert.equal(deliveryId(fields), event.id);
      assert.equal(fields['belfry-type'], 'sdk.broker');
      const dedup = new Deduplicator();
      let handled = 0;
      await dedup.run(fields, () => handled++);
      assert.deepEqual(await dedup.run(fields, () => handled++), { duplicate: true }, 'the same entry read again');
      assert.equal(handled, 1);
    } finally {
      await redis.del(stream);
      await redis.quit();
    }
  });

  test('bulk: a dry run counts and samples, a job cancels, its progress is read back', async () => {
    await tenant.events.batch(
      Array.from({ length: 3 }, () => ({ destination: 'later', delay: '3h', type: 'sdk.bulk' })),
    );
    const dry = await tenant.bulk.dryRun({ filter: { type: 'sdk.bulk' }, action: 'cancel' });
    assert.equal(dry.matched, 3);
    assert.equal(dry.sample.length, 3);
    const job = await tenant.bulk.start({ filter: { type: 'sdk.bulk' }, action: 'cancel' });
    assert.match(job.id, /^bulk_/);
    let last = await tenant.bulk.get(job.id);
    await waitUntil(
      'bulk job finished',
      async () => (last = await tenant.bulk.get(job.id)).state !== 'running',
      10_000,
    );
    assert.equal(last.state, 'succeeded');
    assert.equal(last.done, 3);
    const left = await collect(tenant.events.list({ type: 'sdk.bulk', state: 'scheduled' }));
    assert.equal(left.length, 0);
  });

  test('schedules: preview, create (idempotent), get with next occurrences, list, pause, resume, trigger, the occurrences, delete', async () => {
    const body = {
      cron: '0 9 * * MON-FRI',
      timezone: 'Europe/Paris',
      destination: 'later',
      payload: { report: 'daily' },
      type: 'sdk.schedule',
    };
    const preview = await tenant.schedules.preview({ ...body, count: 3 });
    assert.equal(preview.next.length, 3);
    const created = await tenant.schedules.create(body);
    assert.match(created.id, /^sch_/, 'the client named it');
    const again = await tenant.schedules.create({ ...body, id: created.id });
    assert.equal(again.id, created.id, 'the same id and body: the stored schedule');
    const got = await tenant.schedules.get(created.id);
    assert.equal(got.next.length > 0, true);
    const listed = await collect(tenant.schedules.list({ limit: 1 }));
    assert.ok(listed.some((x) => x.id === created.id));
    assert.equal((await tenant.schedules.pause(created.id)).paused, true);
    assert.equal((await tenant.schedules.resume(created.id)).paused, false);
    const fired = await tenant.schedules.trigger(created.id);
    assert.ok(fired.id.startsWith(`${created.id}@`), fired.id);
    const occurrences = await collect(tenant.events.list({ schedule: created.id }));
    assert.ok(occurrences.some((e) => e.id === fired.id));
    const deleted = await tenant.schedules.delete(created.id);
    assert.equal(deleted.id, created.id);
    await assert.rejects(
      tenant.schedules.get(created.id),
      (err: unknown) => err instanceof BelfryApiError && err.status === 404,
    );
  });

  test('sources: put (the password write-only), get, list, delete', async () => {
    const body = {
      kind: 'kafka' as const,
      brokers: ['127.0.0.1:9'],
      topic: 'sdk-requests',
      sasl: { mechanism: 'plain' as const, username: 'svc', password: 'sdk-secret-pw' },
      allowInsecureCredentials: true,
    };
    const created = await tenant.sources.put('sdk-source', body);
    assert.deepEqual(
      [created.name, created.topic, created.start, created.sasl],
      ['sdk-source', 'sdk-requests', 'earliest', { mechanism: 'plain', username: 'svc' }],
    );
    assert.ok(!JSON.stringify(created).includes('sdk-secret-pw'));
    assert.equal((await tenant.sources.put('sdk-source', { ...body, start: 'latest' })).version, 2);
    const got = await tenant.sources.get('sdk-source');
    assert.equal(got.start, 'latest');
    const listed = await collect(tenant.sources.list({ limit: 1 }));
    assert.ok(listed.some((x) => x.name === 'sdk-source'));
    assert.equal((await tenant.sources.delete('sdk-source')).name, 'sdk-source');
    await assert.rejects(
      tenant.sources.get('sdk-source'),
      (err: unknown) => err instanceof BelfryApiError && err.status === 404,
    );
  });

  test('forecast: scheduled events due ahead, per bucket', async () => {
    await tenant.events.batch(
      Array.from({ length: 4 }, () => ({ destination: 'later', delay: '90m', type: 'sdk.forecast' })),
    );
    const dueMs = Date.now() + 90 * 60_000;
    const forecast = await tenant.forecast({ from: 'now', to: '2h', bucket: '1h', by: 'destination' });
    assert.equal(forecast.bucket, '1h');
    assert.ok(
      forecast.buckets.length >= 2 && forecast.buckets.length <= 3,
      `buckets aligned to the hour: ${forecast.buckets.length}`,
    );
    assert.equal(
      forecast.buckets.reduce((n, b) => n + b.count, 0),
      forecast.total,
    );
    const bucket = forecast.buckets.filter((b) => Date.parse(b.at) <= dueMs).at(-1)!;
    assert.ok((bucket.by?.later ?? 0) >= 4, JSON.stringify(forecast.buckets));
  });

  test('operations: health, readiness, metrics, the OpenAPI document', async () => {
    assert.deepEqual(await tenant.operations.health(), { status: 'ok', version: PACKAGE_VERSION });
    assert.equal((await tenant.operations.ready()).status, 'ready');
    assert.match(await tenant.operations.metrics(), /belfry_/);
    assert.equal((await tenant.operations.openapi()).openapi, '3.1.0');
  });

  test('a create whose answer was lost is sent again with the same id: one event, not two', async () => {
    const proxy = await startAnswerDroppingProxy(node.url, 'POST /v1/events');
    try {
      const viaProxy = new BelfryClient({ baseUrl: proxy.url, apiKey: node.tenantKey, fetch: recordingFetch });
      const outcome = await viaProxy.events.createWithOutcome({
        destination: 'later',
        delay: '1h',
        group: 'sdk-lost-answer',
        payload: { once: true },
      });
      assert.equal(proxy.bodies.length, 2, 'sent twice');
      assert.equal(proxy.bodies[0], proxy.bodies[1], 'the same bytes, the same client-made id');
      assert.equal(outcome.created, false, 'the second try found the event the first one made');
      const stored = await collect(tenant.events.list({ group: 'sdk-lost-answer' }));
      assert.deepEqual(
        stored.map((e) => e.id),
        [outcome.event.id],
        'exactly one event',
      );
    } finally {
      await proxy.close();
    }
  });

  test('a cancel whose answer was lost is sent again, and its 409 "already canceled" answers the canceled event', async () => {
    const event = await tenant.events.create({ destination: 'later', delay: '1h' });
    const proxy = await startAnswerDroppingProxy(node.url, `DELETE /v1/events/${event.id}`);
    try {
      const viaProxy = new BelfryClient({ baseUrl: proxy.url, apiKey: node.tenantKey, fetch: recordingFetch });
      const canceled = await viaProxy.events.cancel(event.id);
      assert.equal(proxy.bodies.length, 2, 'sent twice');
      assert.equal(canceled.state, 'canceled');
      const trace = await collect(tenant.events.transitions(event.id));
      assert.equal(trace.filter((t) => t.toState === 'canceled').length, 1, 'canceled once');
    } finally {
      await proxy.close();
    }
  });

  test("the node's own 429 (Retry-After) is waited out: every create of a burst over the tenant's rate succeeds", async () => {
    const made = await admin.tenants.create({ name: 'sdk-slow' });
    await admin.tenants.patch(made.id, { limits: { scheduleRequestsPerSecond: 1 } });
    // Batching off: a burst of single creates, each its own scheduling request.
    const slow = client((await admin.tenants.createKey(made.id)).key, { batching: false });
    await slow.destinations.put('later', { url: `${receiver.url}/ok` });
    const before = requested.length;
    const events = await Promise.all(
      [0, 1, 2].map((n) => slow.events.create({ destination: 'later', delay: '1h', payload: { n } })),
    );
    assert.equal(new Set(events.map((e) => e.id)).size, 3);
    const tries = requested.slice(before).filter((r) => r === 'POST /v1/events').length;
    assert.ok(tries > 3, `some creates were refused with 429 and sent again (${tries} tries for 3 events)`);
  });

  test('pull: claim, ack, nack and extend call by call; a stale receipt is a 409 BelfryApiError', async () => {
    await tenant.destinations.put('pull-calls', { kind: 'pull' });
    await tenant.events.create({
      id: 'pull-call-1',
      destination: 'pull-calls',
      delay: 0,
      payload: { n: 1 },
      type: 'job.run',
    });
    let claimed: Awaited<ReturnType<typeof tenant.pull.claim>> = [];
    await waitUntil(
      'the event claimed',
      async () => (claimed = await tenant.pull.claim('pull-calls', { max: 5, visibilityTimeout: '30s' })).length === 1,
      10_000,
    );
    const [e] = claimed;
    assert.deepEqual([e.id, e.type, e.attempt, e.payload], ['pull-call-1', 'job.run', 1, { n: 1 }]);
    const ext = await tenant.pull.extend(e.id, { receipt: e.receipt, visibilityTimeout: '60s' });
    assert.ok(Date.parse(ext.visibleUntil) > Date.parse(e.visibleUntil));
    const nacked = await tenant.pull.nack(e.id, { receipt: e.receipt, retryAfter: 0 });
    assert.equal(nacked.state, 'awaiting_retry');
    const stale = await rejection(tenant.pull.ack(e.id, e.receipt));
    assert.equal(stale.status, 409);
    await waitUntil(
      'claimed again',
      async () => (claimed = await tenant.pull.claim('pull-calls', { wait: '1s' })).length === 1,
      10_000,
    );
    assert.equal(claimed[0].attempt, 2);
    assert.equal((await tenant.pull.ack(claimed[0].id, claimed[0].receipt)).state, 'succeeded');
  });

  test('pull: a group spanning a pull and a webhook destination keeps its order across them', async () => {
    await tenant.destinations.put('pull-mixed', { kind: 'pull' });
    await tenant.destinations.put('push-mixed', { url: `${receiver.url}/ok`, timeout: '5s' });
    const now = Date.now();
    await tenant.events.create({ id: 'mix-1', destination: 'pull-mixed', fireAt: now, group: 'mixed' });
    await tenant.events.create({ id: 'mix-2', destination: 'push-mixed', fireAt: now + 1, group: 'mixed' });
    let claimed: Awaited<ReturnType<typeof tenant.pull.claim>> = [];
    await waitUntil(
      'mix-1 claimed',
      async () => (claimed = await tenant.pull.claim('pull-mixed', { wait: '1s' })).length === 1,
      10_000,
    );
    assert.equal((await tenant.events.get('mix-2')).state, 'scheduled', 'the webhook event waits for the pulled one');
    await tenant.pull.ack('mix-1', claimed[0].receipt);
    await waitForState('mix-2', 'succeeded');
    assert.ok(
      receiver.requests.some((r) => r.headers['webhook-id'] === 'mix-2'),
      'delivered to the webhook',
    );
  });

  test('pull: the consumer runs handlers by type, extends long ones, acks, nacks a throw, and stops gracefully', async () => {
    await tenant.destinations.put('pull-consumer', {
      kind: 'pull',
      retry: { minBackoff: '100ms', maxBackoff: '100ms', maxAttempts: 5 },
    });
    const seen: string[] = [];
    let flakyTries = 0;
    let releaseSlow!: () => void;
    const slowGate = new Promise<void>((r) => (releaseSlow = r));
    let slowStarted = false;
    const consumer = tenant.consumer('pull-consumer', { concurrency: 4, visibilityTimeout: '2s', wait: '1s' });
    consumer
      .on('job.ok', async (event) => void seen.push(event.id))
      .on('job.flaky', async (event) => {
        flakyTries += 1;
        if (flakyTries === 1) throw new Error('first try fails');
        seen.push(event.id);
      })
      .on('job.slow', async (event) => {
        slowStarted = true;
        await slowGate;
        seen.push(event.id);
      });
    await consumer.start();
    await tenant.events.batch([
      { id: 'c-ok', destination: 'pull-consumer', delay: 0, type: 'job.ok' },
      { id: 'c-flaky', destination: 'pull-consumer', delay: 0, type: 'job.flaky' },
      { id: 'c-slow', destination: 'pull-consumer', delay: 0, type: 'job.slow' },
    ]);
    await waitForState('c-ok', 'succeeded');
    const flaky = await waitForState('c-flaky', 'succeeded');
    assert.equal(flaky.attempts, 2, 'nacked once, then acked');
    await waitUntil('the slow handler running', () => slowStarted, 10_000);
    // Longer than its 2 s visibility timeout: the consumer extends the claim meanwhile.
    await waitUntil(
      'the slow claim extended',
      async () =>
        (await collect(tenant.events.transitions('c-slow'))).some(
          (t) => (t.detail as { pull?: string } | null)?.pull === 'extend',
        ),
      10_000,
    );
    await waitUntil(
      'a second extension',
      async () =>
        (await collect(tenant.events.transitions('c-slow'))).filter(
          (t) => (t.detail as { pull?: string } | null)?.pull === 'extend',
        ).length >= 2,
      10_000,
    );
    const stopped = consumer.stop();
    releaseSlow();
    await stopped;
    // stop() waited for the slow handler, which acked before stop resolved.
    const slow = await tenant.events.get('c-slow');
    assert.equal(slow.state, 'succeeded');
    assert.equal(slow.attempts, 1, 'never expired while its handler ran');
    assert.deepEqual(seen.sort(), ['c-flaky', 'c-ok', 'c-slow']);
    assert.equal(consumer.running, 0);
  });

  test('pull: the consumer acks and nacks in batches (in its next claim, or one settle request), never one request per event', async () => {
    await tenant.destinations.put('pull-batched', {
      kind: 'pull',
      retry: { minBackoff: '100ms', maxBackoff: '100ms', maxAttempts: 5 },
    });
    const N = 200;
    const handled = new Map<string, number>();
    const errors: unknown[] = [];
    const from = requested.length;
    const consumer = tenant.consumer('pull-batched', {
      concurrency: 50,
      visibilityTimeout: '30s',
      wait: '1s',
      onError: (err) => errors.push(err),
    });
    consumer.on('*', async (event) => {
      const tries = (handled.get(event.id) ?? 0) + 1;
      handled.set(event.id, tries);
      // Every tenth event fails its first try: nacked, then claimed again and acked.
      if (Number(event.id.slice(3)) % 10 === 0 && tries === 1) throw new NackError('not yet', { retryAfter: 0 });
    });
    await consumer.start();
    await tenant.events.batch(
      Array.from({ length: N }, (_, i) => ({ id: `pb-${i}`, destination: 'pull-batched', delay: 0 })),
    );
    await waitUntil(
      'every event handled',
      () => handled.size === N && [...handled].every(([id, n]) => n === (Number(id.slice(3)) % 10 === 0 ? 2 : 1)),
      30_000,
    );
    await consumer.stop();
    for (let i = 0; i < N; i += 1) {
      const e = await tenant.events.get(`pb-${i}`);
      assert.equal(e.state, 'succeeded', `pb-${i}`);
      assert.equal(e.attempts, i % 10 === 0 ? 2 : 1, `pb-${i}'s attempts`);
    }
    const calls = requested.slice(from);
    const perEvent = calls.filter((r) => /^POST \/v1\/events\/pb-\d+\/(ack|nack)$/.test(r));
    const settles = calls.filter((r) => r === 'POST /v1/events/settle').length;
    const claims = calls.filter((r) => r === 'POST /v1/destinations/pull-batched/claim').length;
    assert.deepEqual(perEvent, [], 'no ack or nack request of its own');
    assert.ok(
      settles + claims < N / 2,
      `${settles} settle requests and ${claims} claims for ${N + N / 10} acks and nacks`,
    );
    assert.equal(errors.filter((e) => !(e instanceof NackError)).length, 0, `errors: ${errors.join('; ')}`);
  });

  test('every route of the client was called by the tests above', () => {
    const missing = (Object.entries(ROUTES) as [Operation, (typeof ROUTES)[Operation]][]).filter(([, route]) => {
      const pattern = new RegExp(
        `^${route.method} ${route.path.replace(/\{[A-Za-z]+\}/g, '[^/]+').replace(/\./g, '\\.')}$`,
      );
      return !requested.some((r) => pattern.test(r));
    });
    assert.deepEqual(
      missing.map(([op]) => op),
      [],
    );
  });
});

describe('the client and the API cannot drift', () => {
  test("the client's route table and GET /openapi.json list the same routes", async () => {
    const doc = await tenant.operations.openapi();
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    );
    const inClient = Object.values(ROUTES).map((r) => `${r.method} ${r.path}`);
    const notInClient = documented.filter((r) => !inClient.includes(r));
    const notInApi = inClient.filter((r) => !documented.includes(r));
    assert.deepEqual(
      notInClient,
      [],
      'routes of the API the client does not cover: add them to src/client/routes.ts and client.ts',
    );
    assert.deepEqual(notInApi, [], 'routes of the client the API does not have');
  });
});
