/**
 * Events through the API, scheduler and dispatcher to every broker kind, against the machine's
 * Redis, NATS and RabbitMQ and a librdkafka mock cluster the test starts: each arrives after its
 * fireAt (never early), a group in order, body = the payload, with the belfry headers; a broker
 * that refuses for good discards the event with its reason in the trace.
 */
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { after, before, describe, it } from 'node:test';
import {
  consumeAmqp,
  consumeKafka,
  consumeNats,
  consumeRedis,
  REDIS_URL,
  type BrokerConsumer,
} from '../support/brokers.ts';
import { startMockKafka, type MockKafka } from '../support/kafka/mock-cluster.ts';
import { startTestNode, waitUntil, type TestNode } from '../support/node.ts';

describe('delivery to brokers', { timeout: 120_000 }, () => {
  let t: TestNode;
  let mock: MockKafka;
  const consumers: BrokerConsumer[] = [];

  before(async () => {
    // Both started at once; whichever started is kept for after() to close, even when the other
    // failed (a node left open kept the test process alive when the Kafka mock could not start).
    const [node, kafka] = await Promise.allSettled([startTestNode(), startMockKafka(1)]);
    if (node.status === 'fulfilled') t = node.value;
    if (kafka.status === 'fulfilled') mock = kafka.value;
    for (const r of [node, kafka]) if (r.status === 'rejected') throw r.reason;
  });
  after(async () => {
    await t?.close();
    for (const c of consumers) await c.stop();
    await mock?.stop();
  });

  const kinds: [string, () => Promise<BrokerConsumer>][] = [
    ['redis', () => consumeRedis()],
    ['nats', () => consumeNats()],
    ['amqp', () => consumeAmqp()],
    ['kafka', () => consumeKafka(mock.bootstrap, (name, p) => mock.createTopic(name, p))],
  ];

  for (const [kind, consume] of kinds) {
    it(`${kind}: fires on time and never early, a group in order, the payload as the body, with the belfry headers`, async () => {
      const c = await consume();
      consumers.push(c);
      const name = `to-${kind}`;
      const put = await t.api('PUT', `/v1/destinations/${name}`, { ...c.destination, headers: { 'x-team': 'core' } });
      assert.equal(put.status, 201, JSON.stringify(put.body));
      const base = Date.now() + 600;
      const grouped = Array.from({ length: 15 }, (_, i) => ({
        id: `${kind}-g-${i}`,
        fireAt: base + i * 15,
        group: 'order-1',
        payload: { i, kind },
      }));
      const loose = Array.from({ length: 10 }, (_, i) => ({
        id: `${kind}-l-${i}`,
        fireAt: base + i * 20,
        payload: { loose: i, text: 'd\u00e9j\u00e0' },
      }));
      for (const e of [...grouped, ...loose]) {
        const res = await t.api('POST', '/v1/events', { ...e, destination: name, headers: { 'x-kind': 'test' } });
        assert.equal(res.status, 201, JSON.stringify(res.body));
      }
      const all = [...grouped, ...loose];
      await waitUntil(`${kind}: all ${all.length} messages`, () => c.messages.length >= all.length, 20_000);
      const byId = new Map(c.messages.map((m) => [m.headers['belfry-event-id'], m]));
      for (const e of all) {
        const m = byId.get(e.id);
        assert.ok(m, `${e.id} arrived`);
        assert.ok(m.receivedAt >= e.fireAt, `${e.id} arrived ${e.fireAt - m.receivedAt} ms early`);
        assert.deepEqual(m.body, Buffer.from(JSON.stringify(e.payload)), 'body = the payload bytes');
        assert.equal(m.headers['belfry-fire-at'], new Date(e.fireAt).toISOString());
        assert.equal(m.headers['belfry-tenant-id'], t.tenantId);
        assert.equal(m.headers['belfry-attempt'], '1');
        assert.equal(m.headers['x-team'], 'core');
        assert.equal(m.headers['x-kind'], 'test');
        assert.equal(m.headers['belfry-group'], 'group' in e ? 'order-1' : undefined);
      }
      const order = c.messages
        .filter((m) => m.headers['belfry-group'] === 'order-1')
        .map((m) => m.headers['belfry-event-id']);
      assert.deepEqual(
        order,
        grouped.map((e) => e.id),
        'the group in fireAt order',
      );
      await waitUntil(
        `${kind}: every event succeeded`,
        async () => {
          const states = await Promise.all(all.map(async (e) => (await t.api('GET', `/v1/events/${e.id}`)).body.state));
          return states.every((s) => s === 'succeeded');
        },
        10_000,
      );
      assert.equal(c.messages.length, all.length, 'nothing twice');
    });
  }

  it('redis: a broker that refuses for good (WRONGTYPE) discards, its reason in the trace', async () => {
    const admin = new Redis(REDIS_URL);
    const key = `belfry-test-string-${process.pid}`;
    await admin.set(key, 'not a stream');
    try {
      assert.equal(
        (await t.api('PUT', '/v1/destinations/refusing', { kind: 'redis', url: REDIS_URL, stream: key })).status,
        201,
      );
      assert.equal(
        (await t.api('POST', '/v1/events', { id: 'refused-1', delay: 0, destination: 'refusing', payload: {} })).status,
        201,
      );
      await waitUntil(
        'discarded',
        async () => (await t.api('GET', '/v1/events/refused-1')).body.state === 'discarded',
        10_000,
      );
      const trace = (await t.api('GET', '/v1/events/refused-1/transitions')).body.transitions as {
        toState: string;
        error?: string;
      }[];
      const last = trace.at(-1)!;
      assert.equal(last.toState, 'discarded');
      assert.match(String(last.error), /WRONGTYPE/);
    } finally {
      await admin.del(key);
      admin.disconnect();
    }
  });
});
