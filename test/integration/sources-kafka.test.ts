/**
 * Kafka sources against a real Kafka-protocol cluster (librdkafka's mock cluster), end to end:
 * messages in → events scheduled and delivered to a loopback webhook; a bad message → the
 * dead-letter topic, bytes unchanged, with `belfry-error`; GET /v1/sources shows the counts, lag
 * and errors. Then, reader by reader: the offset is committed only after the events are stored,
 * and a chunk read again after a failure creates nothing twice.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { pino } from 'pino';
import { bodyBytesMaxOf } from '../../src/api/body-limits.ts';
import { DEFAULT_API_LIMITS } from '../../src/api/deps.ts';
import { AddressPolicy } from '../../src/core/address.ts';
import { SystemClock } from '../../src/core/clock.ts';
import { KafkaSourceReader, type SourceMessage } from '../../src/sources/kafka/reader.ts';
import { SourceManager } from '../../src/sources/manager.ts';
import { consumeKafka, type BrokerConsumer } from '../support/brokers.ts';
import { startMockKafka, type MockKafka } from '../support/kafka/mock-cluster.ts';
import { bearer, makeTestApp, sourceIngestOf, type TestApp } from '../support/app.ts';
import { ADMIN_KEY, startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';

let mock: MockKafka;
let kafka: Kafka;
let producer: Producer;
let admin: Admin;
let n = 0;
const unique = (prefix: string) => `${prefix}-${process.pid}-${++n}`;

before(async () => {
  mock = await startMockKafka(1);
  kafka = new Kafka({ clientId: 'belfry-test', brokers: mock.bootstrap.split(','), logLevel: logLevel.NOTHING });
  producer = kafka.producer({ idempotent: false, allowAutoTopicCreation: false });
  await producer.connect();
  admin = kafka.admin();
  await admin.connect();
});
after(async () => {
  await producer?.disconnect();
  await admin?.disconnect();
  await mock?.stop();
});

/** The group's committed offset of each partition ('-1': none). */
async function committed(groupId: string, topic: string): Promise<string[]> {
  const [t] = await admin.fetchOffsets({ groupId, topics: [topic] });
  return [...t.partitions].sort((a, b) => a.partition - b.partition).map((p) => p.offset);
}

describe('a Kafka source on a node', () => {
  let node: TestNode;
  let receiver: Receiver;
  let dlq: BrokerConsumer;

  before(async () => {
    receiver = await startReceiver();
    node = await startTestNode({}, { sources: { pollMs: 100, backoffMsMin: 100 } });
    dlq = await consumeKafka(mock.bootstrap, (name, partitions) => mock.createTopic(name, partitions));
  });
  after(async () => {
    await node?.close();
    await receiver?.close();
    await dlq?.stop();
  });

  it('schedules the events of every valid message, delivers them, sends a bad one to the dead-letter topic, and counts both', async () => {
    const topic = unique('requests');
    await mock.createTopic(topic, 2);
    assert.equal((await node.api('PUT', '/v1/destinations/hooks', { url: `${receiver.url}/hook` })).status, 201);
    const good = [
      { destination: 'hooks', payload: { n: 1 } },
      { destination: 'hooks', payload: { n: 2 }, id: 'client-chosen-id' },
      {
        events: [
          { destination: 'hooks', payload: { n: 3 } },
          { destination: 'hooks', payload: { n: 4 }, delay: '10ms' },
        ],
      },
    ];
    const notJson = Buffer.from('{"destination": "hooks", payl');
    const unknownDestination = Buffer.from(JSON.stringify({ destination: 'nowhere', payload: { n: 5 } }));
    await producer.send({
      topic,
      acks: -1,
      messages: [
        ...good.map((g, i) => ({ key: `k${i}`, value: JSON.stringify(g), partition: i % 2 })),
        { key: 'bad1', value: notJson, partition: 0, headers: { 'x-trace': 'abc' } },
        { key: 'bad2', value: unknownDestination, partition: 1 },
      ],
    });
    const groupId = unique('belfry-group');
    const put = await node.api('PUT', '/v1/sources/orders', {
      kind: 'kafka',
      brokers: mock.bootstrap.split(','),
      topic,
      groupId,
      deadLetterTopic: dlq.destination.topic,
    });
    assert.equal(put.status, 201, JSON.stringify(put.body));

    await receiver.waitFor((reqs) => reqs.length >= 4, 60_000);
    const delivered = receiver.requests.map((r) => (r.json as { n: number }).n).sort();
    assert.deepEqual(delivered, [1, 2, 3, 4]);
    const ids = receiver.requests.map((r) => String(r.headers['webhook-id'])).sort();
    assert.ok(ids.includes('client-chosen-id'), ids.join());
    const derived = ids.filter((id) => id !== 'client-chosen-id');
    assert.equal(derived.length, 3);
    for (const id of derived) assert.match(id, /^orders:[01]:\d+:[01]$/);

    await waitUntil('two dead letters', () => dlq.messages.length >= 2, 60_000);
    const byKey = new Map(dlq.messages.map((m) => [m.body.toString(), m]));
    const dead1 = byKey.get(notJson.toString());
    const dead2 = byKey.get(unknownDestination.toString());
    assert.ok(dead1 && dead2, 'both bad messages, bytes unchanged');
    assert.match(dead1.headers['belfry-error'], /not JSON/);
    assert.equal(dead1.headers['x-trace'], 'abc', 'its own headers kept');
    assert.equal(dead1.headers['belfry-source'], 'orders');
    assert.match(dead2.headers['belfry-error'], /destination/);

    let view:
      | { state: string; accepted: number; rejected: number; lag: number | null; lastErrors: { message: string }[] }
      | undefined;
    await waitUntil(
      'the counts reported',
      async () => {
        view = (await node.api('GET', '/v1/sources/orders')).body;
        return view!.accepted === 3 && view!.rejected === 2;
      },
      30_000,
    );
    assert.equal(view!.state, 'running');
    assert.equal(view!.lag, 0);
    assert.equal(view!.lastErrors.length, 2);
    assert.deepEqual(await committed(groupId, topic), ['3', '2'], 'every message committed, the bad ones too');
    const metrics = await (await fetch(`${node.url}/metrics`)).text();
    assert.match(metrics, /belfry_source_messages_total\{outcome="accepted"\} 3\b/);
    assert.match(metrics, /belfry_source_messages_total\{outcome="rejected"\} 2\b/);

    // A message produced later is read too; nothing is made twice.
    await producer.send({
      topic,
      acks: -1,
      messages: [{ value: JSON.stringify({ destination: 'hooks', payload: { n: 6 } }), partition: 1 }],
    });
    await receiver.waitFor((reqs) => reqs.length >= 5, 60_000);
    const list = await node.api('GET', '/v1/events?limit=100');
    assert.equal(list.body.events.length, 5);

    assert.equal((await node.api('DELETE', '/v1/sources/orders')).status, 200);
  });

  it("sends a message over the batch route's limit to the dead-letter topic with the reason, parses a large one, and goes on reading", async () => {
    const topic = unique('large');
    await mock.createTopic(topic, 1);
    // Made by the first test (200) or here (201).
    assert.ok(
      [200, 201].includes((await node.api('PUT', '/v1/destinations/hooks', { url: `${receiver.url}/hook` })).status),
    );
    const limit = bodyBytesMaxOf('batch', DEFAULT_API_LIMITS, Infinity);
    // One byte over the limit (4,358,144 bytes with the default limits; the node's bodyBytesMax is 64 MiB).
    const over = Buffer.from(JSON.stringify({ destination: 'hooks', payload: { n: 'over' } }).padEnd(limit + 1, ' '));
    // A valid batch near the limit: 1,000 events of object payloads, parsed in slices.
    const events = Array.from({ length: 1_000 }, (_, i) => ({
      destination: 'hooks',
      delay: '1h',
      payload: { i, rows: Array.from({ length: 170 }, (_, k) => ({ k, v: 'abcdef' })) },
    }));
    const large = Buffer.from(JSON.stringify({ events }));
    assert.ok(large.length > 3 * 1024 * 1024 && large.length <= limit, `${large.length} bytes`);
    await producer.send({
      topic,
      acks: -1,
      messages: [
        { key: 'over', value: over },
        { key: 'large', value: large },
        { key: 'after', value: JSON.stringify({ destination: 'hooks', payload: { n: 'after' } }) },
      ],
    });
    const groupId = unique('belfry-large');
    const put = await node.api('PUT', '/v1/sources/large', {
      kind: 'kafka',
      brokers: mock.bootstrap.split(','),
      topic,
      groupId,
      deadLetterTopic: dlq.destination.topic,
    });
    assert.equal(put.status, 201, JSON.stringify(put.body));

    // The message after the refused one is delivered: the source did not stop at it.
    await receiver.waitFor((reqs) => reqs.some((r) => (r.json as { n?: string }).n === 'after'), 60_000);
    await waitUntil(
      'the refused message dead-lettered',
      () => dlq.messages.some((m) => m.headers['belfry-source'] === 'large'),
      60_000,
    );
    const dead = dlq.messages.filter((m) => m.headers['belfry-source'] === 'large');
    assert.equal(dead.length, 1);
    assert.ok(dead[0].body.equals(over), 'its bytes unchanged');
    assert.match(
      dead[0].headers['belfry-error'],
      new RegExp(
        `^payload_too_large: a message of ${limit + 1} bytes: over the limit of ${limit} bytes .*batchEventsMax × 4096 \\+ payloadBytesMax`,
      ),
    );
    assert.equal(dead[0].headers['belfry-offset'], '0');

    let view: { state: string; accepted: number; rejected: number; lastErrors: { message: string }[] } | undefined;
    await waitUntil(
      'the counts reported',
      async () => {
        view = (await node.api('GET', '/v1/sources/large')).body;
        return view!.accepted === 2 && view!.rejected === 1;
      },
      30_000,
    );
    assert.equal(view!.state, 'running');
    assert.match(view!.lastErrors[0].message, /offset 0: payload_too_large/);
    assert.deepEqual(await committed(groupId, topic), ['3']);
    for (const i of [0, 999]) {
      const e = await node.api('GET', `/v1/events/${encodeURIComponent(`large:0:1:${i}`)}`);
      assert.equal(e.status, 200, JSON.stringify(e.body));
      assert.deepEqual(e.body.payload, events[i].payload);
    }
    assert.equal(
      (await node.api('GET', `/v1/events/${encodeURIComponent('large:0:0:0')}`)).status,
      404,
      'nothing of the refused message',
    );
    assert.equal((await node.api('DELETE', '/v1/sources/large')).status, 200);
  });

  it("reads a source at its tenant's scheduleRequestsPerSecond, one request per message, shared with the API: slowed, nothing refused or lost", async () => {
    const RATE = 20;
    const MESSAGES = 120;
    // A tenant of its own, so its rate bucket is fresh and no other test shares it.
    const tenant = await node.api('POST', '/v1/tenants', { name: 'rated' }, ADMIN_KEY);
    assert.equal(tenant.status, 201);
    const key = (await node.api('POST', `/v1/tenants/${tenant.body.id}/keys`, {}, ADMIN_KEY)).body.key as string;
    assert.equal(
      (
        await node.api(
          'PATCH',
          `/v1/tenants/${tenant.body.id}`,
          { limits: { scheduleRequestsPerSecond: RATE } },
          ADMIN_KEY,
        )
      ).status,
      200,
    );
    assert.equal((await node.api('PUT', '/v1/destinations/hooks', { url: `${receiver.url}/hook` }, key)).status, 201);
    const topic = unique('rated');
    await mock.createTopic(topic, 2);
    // Every tenth message a batch of two events: still one request.
    const bodies = Array.from({ length: MESSAGES }, (_, i) =>
      i % 10 === 0
        ? {
            events: [
              { destination: 'hooks', delay: '1h', payload: { i, k: 0 } },
              { destination: 'hooks', delay: '1h', payload: { i, k: 1 } },
            ],
          }
        : { destination: 'hooks', delay: '1h', payload: { i } },
    );
    await producer.send({
      topic,
      acks: -1,
      messages: bodies.map((b, i) => ({ value: JSON.stringify(b), partition: i % 2 })),
    });
    const groupId = unique('belfry-rated');
    const startedMs = performance.now();
    const put = await node.api(
      'PUT',
      '/v1/sources/rated',
      { kind: 'kafka', brokers: mock.bootstrap.split(','), topic, groupId, deadLetterTopic: dlq.destination.topic },
      key,
    );
    assert.equal(put.status, 201, JSON.stringify(put.body));

    // While the source is held back, the tenant's bucket is empty: the API's requests take from
    // the same one and are refused with 429 (and those that pass count against the source).
    let limited = 0;
    let apiCreated = 0;
    let view: { accepted: number; rejected: number; lag: number | null } | undefined;
    await waitUntil(
      'every message accepted',
      async () => {
        view = (await node.api('GET', '/v1/sources/rated', undefined, key)).body;
        if (view!.accepted >= MESSAGES) return true;
        if (view!.accepted > 0) {
          const res = await node.api(
            'POST',
            '/v1/events',
            { destination: 'hooks', delay: '1h', id: `api-${apiCreated + limited}` },
            key,
          );
          if (res.status === 429) limited++;
          else if (res.status === 201) apiCreated++;
          else assert.fail(`POST /v1/events: ${res.status} ${JSON.stringify(res.body)}`);
        }
        return false;
      },
      120_000,
      200,
    );
    const elapsedMs = performance.now() - startedMs;
    // The bucket holds one second of the rate: MESSAGES requests take at least MESSAGES/RATE - 1 s.
    assert.ok(
      elapsedMs >= (MESSAGES / RATE - 1) * 1000 * 0.95,
      `${MESSAGES} messages at ${RATE}/s took only ${Math.round(elapsedMs)} ms`,
    );
    assert.ok(limited >= 1, `the API shares the source's rate: ${limited} refused, ${apiCreated} created meanwhile`);
    assert.equal(view!.rejected, 0, 'nothing refused');
    assert.ok(!dlq.messages.some((m) => m.headers['belfry-source'] === 'rated'), 'nothing dead-lettered');
    assert.deepEqual(await committed(groupId, topic), [String(MESSAGES / 2), String(MESSAGES / 2)]);
    const ids = (await node.api('GET', '/v1/events?limit=1000', undefined, key)).body.events.map(
      (e: { id: string }) => e.id,
    ) as string[];
    const fromSource = ids.filter((id) => id.startsWith('rated:'));
    assert.equal(fromSource.length, MESSAGES + MESSAGES / 10, 'every event of every message, once');
    assert.equal(new Set(fromSource).size, fromSource.length);
    assert.equal(ids.length - fromSource.length, apiCreated);
    assert.equal((await node.api('DELETE', '/v1/sources/rated', undefined, key)).status, 200);
  });

  it('shows a source it cannot read as failing, with the error, and keeps trying', async () => {
    // Port 1 on loopback: allowed by --allow-hosts, refused by the kernel.
    assert.equal(
      (await node.api('PUT', '/v1/sources/unreachable', { kind: 'kafka', brokers: ['127.0.0.1:1'], topic: 'nowhere' }))
        .status,
      201,
    );
    let view: { state: string; lastErrors: { message: string }[] } | undefined;
    await waitUntil(
      'the source failing',
      async () => {
        view = (await node.api('GET', '/v1/sources/unreachable')).body;
        return view!.state === 'failing' && view!.lastErrors.length >= 1;
      },
      90_000,
      100,
    );
    assert.match(view!.lastErrors[0].message, /reader failed/);
    assert.match(await (await fetch(`${node.url}/metrics`)).text(), /belfry_source_reader_failures_total [1-9]/);
    assert.equal((await node.api('DELETE', '/v1/sources/unreachable')).status, 200);
  });

  it('with start "latest", skips what the topic holds', async () => {
    const topic = unique('latest');
    await mock.createTopic(topic, 1);
    await node.api('PUT', '/v1/destinations/hooks', { url: `${receiver.url}/hook` });
    await producer.send({
      topic,
      acks: -1,
      messages: [{ value: JSON.stringify({ destination: 'hooks', payload: { old: true } }) }],
    });
    const groupId = unique('belfry-latest');
    const before = receiver.requests.length;
    assert.equal(
      (
        await node.api('PUT', '/v1/sources/latest', {
          kind: 'kafka',
          brokers: mock.bootstrap.split(','),
          topic,
          groupId,
          start: 'latest',
        })
      ).status,
      201,
    );
    // Where "latest" lands is decided when the reader first fetches, after it joins: produce
    // until one message comes through, then check that the old one never did.
    let sent = 0;
    await waitUntil(
      'a fresh message delivered',
      async () => {
        if (receiver.requests.length > before) return true;
        await producer.send({
          topic,
          acks: -1,
          messages: [{ value: JSON.stringify({ destination: 'hooks', payload: { fresh: ++sent } }) }],
        });
        return false;
      },
      90_000,
      300,
    );
    await waitUntil(
      'the source counted them',
      async () => (await node.api('GET', '/v1/sources/latest')).body.accepted >= 1,
      30_000,
    );
    const mine = receiver.requests.slice(before).map((r) => r.json as Record<string, unknown>);
    assert.ok(mine.length >= 1 && mine.every((p) => typeof p.fresh === 'number'), JSON.stringify(mine));
    await node.api('DELETE', '/v1/sources/latest');
  });
});

describe('a source reader: commits after durability', () => {
  let t: TestApp;
  before(async () => {
    t = await makeTestApp();
    const res = await t.app.inject({
      method: 'PUT',
      url: '/v1/destinations/hooks',
      headers: bearer(t.tenantKey),
      payload: { url: 'http://127.0.0.1:9/hook' },
    });
    assert.equal(res.statusCode, 201);
  });
  after(() => t.cleanup());

  it('commits a chunk only after its events are stored, and a chunk read again after a failure creates nothing twice', async () => {
    const topic = unique('durable');
    await mock.createTopic(topic, 1);
    const groupId = unique('belfry-durable');
    await producer.send({
      topic,
      acks: -1,
      messages: [0, 1, 2].map((i) => ({ value: JSON.stringify({ destination: 'hooks', payload: { i } }) })),
    });
    const put = await t.store.sourcePut({
      tenantId: t.tenantId,
      name: 'dur',
      perTenantMax: 10,
      now: t.clock.now(),
      spec: {
        kind: 'kafka',
        brokers: mock.bootstrap.split(','),
        topic,
        groupId,
        deadLetterTopic: null,
        start: 'earliest',
        sasl: null,
        ssl: false,
      },
    });
    assert.equal(put.kind, 'created');
    const clock = new SystemClock();
    const sink = sourceIngestOf(t, clock, 1 << 20, () => {});
    const seen: { stored: number; committed: string[] }[] = [];
    let failures = 0;
    const afterStore = async (messages: SourceMessage[]) => {
      const stored = (
        await Promise.all(messages.map((m) => t.store.eventGet({ tenantId: t.tenantId, id: `dur:0:${m.offset}:0` })))
      ).filter(Boolean).length;
      seen.push({ stored, committed: await committed(groupId, topic) });
      if (failures++ === 0) throw new Error('the node fails after the insert, before the commit');
    };
    const manager = new SourceManager(
      {
        store: t.store,
        clock,
        logger: pino({ level: 'silent' }),
        makeReader: (source, report, onCrash) =>
          new KafkaSourceReader({
            source,
            sink,
            policy: new AddressPolicy(['127.0.0.1']),
            now: () => clock.now(),
            report,
            onCrash,
            afterStore,
          }),
      },
      { pollMs: 100, backoffMsMin: 100 },
    );
    manager.start();
    try {
      await waitUntil(
        'the group committed offset 3',
        async () => (await committed(groupId, topic))[0] === '3',
        90_000,
        100,
      );
    } finally {
      await manager.stop();
    }
    assert.ok(seen.length >= 2, `read twice: ${JSON.stringify(seen)}`);
    assert.deepEqual(seen[0], { stored: 3, committed: ['-1'] }, 'stored, not committed, when the failure struck');
    assert.deepEqual(seen[1], { stored: 3, committed: ['-1'] }, 'read again from the uncommitted offset');
    const events = (await t.store.eventList({ tenantId: t.tenantId, limit: 100 })).events;
    assert.deepEqual(events.map((e) => e.id).sort(), ['dur:0:0:0', 'dur:0:1:0', 'dur:0:2:0'], 'nothing made twice');
    const source = await t.store.sourceGet({ tenantId: t.tenantId, name: 'dur' });
    assert.equal(source?.acceptedCount, 3, 'counted once, after the commit');
    assert.ok(source?.lastErrors.some((e) => e.message.includes('fails after the insert')) || failures >= 2);
  });
});
