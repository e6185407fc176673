/**
 * One Kafka source shared by two node processes on one PostgreSQL schema, against a real
 * Kafka-protocol cluster (librdkafka's mock): both nodes read the topic in the source's consumer
 * group, each its share of the partitions, while requests stream in (some with an idempotency key
 * and produced twice, as a producer's retry would, some without one). Mid-stream one node is
 * killed with SIGKILL; when its session times out the other takes over its partitions (what the
 * dead one stored but had not committed is read again) and goes on. Afterwards every request is
 * exactly one event, none lost, and the group has committed every partition to its end.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Kafka, logLevel, type Admin, type Producer } from 'kafkajs';
import { callApi as api } from '../support/http.ts';
import { startMockKafka, type MockKafka } from '../support/kafka/mock-cluster.ts';
import { waitUntil } from '../support/node.ts';
import { dropTestSchema, TEST_PG_URL } from '../support/pg.ts';
import { killNodeProcess, startNodeProcess, stopNodeProcess, type NodeProcess } from '../support/process.ts';
import { scrapeMetrics } from '../support/metrics.ts';

const ADMIN_KEY = 'e2e-admin-key-0123456789abcdef';
const PARTITIONS = 4;
const PER_SEND = 10;
const SEND_EVERY_MS = 50;
/** Requests streamed after the kill, before the stream ends. */
const AFTER_KILL = 400;

/** The node's count of committed source messages (its /metrics). */
async function acceptedOn(node: NodeProcess): Promise<number> {
  return (await scrapeMetrics(node.url)).get('belfry_source_messages_total{outcome="accepted"}') ?? 0;
}

describe('a Kafka source shared by two nodes on PostgreSQL', () => {
  const schema = `belfry_e2e_${randomBytes(4).toString('hex')}`;
  const store = `${TEST_PG_URL}?schema=${schema}`;
  const dirs: string[] = [];
  const nodes: NodeProcess[] = [];
  let mock: MockKafka | undefined;
  let producer: Producer | undefined;
  let admin: Admin | undefined;
  after(async () => {
    for (const node of nodes) await stopNodeProcess(node);
    await producer?.disconnect();
    await admin?.disconnect();
    await mock?.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    await dropTestSchema(schema);
  });

  async function startNode(id: string): Promise<NodeProcess> {
    const dir = mkdtempSync(join(tmpdir(), 'belfry-e2e-srcc-'));
    dirs.push(dir);
    const node = await startNodeProcess([
      '--store',
      store,
      '--node-id',
      id,
      '--data',
      dir,
      '--admin-key',
      ADMIN_KEY,
      '--allow-hosts',
      '127.0.0.1',
    ]);
    nodes.push(node);
    return node;
  }

  it('splits the partitions, makes one event per request, and the survivor takes over a killed node’s partitions', async () => {
    mock = await startMockKafka(1);
    const topic = `shared-requests-${process.pid}`;
    const groupId = `shared-${process.pid}`;
    await mock.createTopic(topic, PARTITIONS);
    const kafka = new Kafka({
      clientId: 'belfry-test',
      brokers: mock.bootstrap.split(','),
      logLevel: logLevel.NOTHING,
    });
    producer = kafka.producer({ idempotent: false });
    await producer.connect();
    admin = kafka.admin();
    await admin.connect();

    const a = await startNode('src-a');
    const b = await startNode('src-b');
    const tenant = await api(a.url, ADMIN_KEY, 'POST', '/v1/tenants', { name: 'e2e' });
    const key = (await api(a.url, ADMIN_KEY, 'POST', `/v1/tenants/${tenant.body.id}/keys`, {})).body.key as string;
    // Due in an hour: this test is about the store; delivery has its own tests.
    assert.equal(
      (await api(a.url, key, 'PUT', '/v1/destinations/later', { url: 'http://127.0.0.1:9/never' })).status,
      201,
    );
    const put = await api(a.url, key, 'PUT', '/v1/sources/shared', {
      kind: 'kafka',
      brokers: mock.bootstrap.split(','),
      topic,
      groupId,
    });
    assert.equal(put.status, 201, JSON.stringify(put.body));

    // The stream: request n has the idempotency key `req-n` when n is even and none when odd;
    // every fifth send also repeats an earlier keyed request, byte for byte (a producer's retry).
    const body = (n: number) =>
      JSON.stringify({ ...(n % 2 === 0 ? { id: `req-${n}` } : {}), destination: 'later', delay: '1h', payload: { n } });
    let sent = 0;
    let repeats = 0;
    let stopAt = Number.POSITIVE_INFINITY;
    const streaming = (async () => {
      for (let send = 0; sent < stopAt; send++) {
        const values = Array.from({ length: PER_SEND }, (_, k) => body(sent + k));
        if (send % 5 === 4) {
          values.push(body(2 * Math.floor(sent / 4)));
          repeats++;
        }
        await producer!.send({ topic, acks: -1, messages: values.map((value) => ({ value })) });
        sent += PER_SEND;
        await new Promise((r) => setTimeout(r, SEND_EVERY_MS));
      }
    })();

    try {
      // Both nodes read: the group split the partitions between them.
      await waitUntil(
        'both nodes committing messages',
        async () => (await acceptedOn(a)) > 0 && (await acceptedOn(b)) > 0,
        60_000,
        200,
      );
      const before = { a: await acceptedOn(a), b: await acceptedOn(b) };
      await killNodeProcess(a);
      nodes.splice(nodes.indexOf(a), 1);
      stopAt = sent + AFTER_KILL;
      await streaming;
      console.log(`shared source: ${before.a} messages committed by A and ${before.b} by B when A was killed`);
    } finally {
      stopAt = 0;
      await streaming.catch(() => {});
    }

    // B takes over A's partitions (after A's session times out) and reads the topic to its end.
    const ends = (await admin.fetchTopicOffsets(topic)).sort((x, y) => x.partition - y.partition).map((p) => p.high);
    await waitUntil(
      'every partition committed to its end',
      async () => {
        const [t] = await admin!.fetchOffsets({ groupId, topics: [topic] });
        const done = [...t.partitions].sort((x, y) => x.partition - y.partition).map((p) => p.offset);
        return done.join() === ends.join();
      },
      90_000,
      250,
    );

    const events: { id: string; payload: { n: number } }[] = [];
    let cursor: string | null = null;
    do {
      const page: {
        status: number;
        body: { events: { id: string; payload: { n: number } }[]; nextCursor: string | null };
      } = await api(b.url, key, 'GET', `/v1/events?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      assert.equal(page.status, 200);
      events.push(...page.body.events);
      cursor = page.body.nextCursor;
    } while (cursor);
    const ns = events.map((e) => e.payload.n).sort((x, y) => x - y);
    assert.equal(new Set(ns).size, sent, 'every request has an event: none lost');
    assert.equal(
      events.length,
      sent,
      `one event per request (${sent} requests, ${repeats} of them produced twice): nothing made twice`,
    );
    assert.ok(ns.every((n, i) => n === i));
    for (const e of events) {
      if (e.payload.n % 2 === 0) assert.equal(e.id, `req-${e.payload.n}`);
      else assert.match(e.id, new RegExp(`^shared:[0-${PARTITIONS - 1}]:\\d+:0$`));
    }
    const view = (await api(b.url, key, 'GET', '/v1/sources/shared')).body;
    assert.equal(view.rejected, 0);
    await waitUntil(
      'the source reports no lag',
      async () => (await api(b.url, key, 'GET', '/v1/sources/shared')).body.lag === 0,
      10_000,
      200,
    );
    console.log(
      `shared source: ${sent} requests (+${repeats} repeated), ${events.length} events; B committed ${await acceptedOn(b)} messages in all`,
    );
  });
});
