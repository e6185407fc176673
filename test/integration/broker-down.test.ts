/**
 * A broker that goes down, with real servers the test owns (a redis-server, a nats-server and a
 * RabbitMQ node on ports of their own, a librdkafka mock cluster whose broker is set down): while
 * it is down, its destination's events wait in awaiting_retry with the error in their trace, and a
 * webhook destination keeps flowing on time; once it is back, every event is delivered, none lost.
 * RabbitMQ goes down mid-stream: the channel's pooled connection, open and used, is lost.
 */
import assert from 'node:assert/strict';
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { after, before, describe, it } from 'node:test';
import { startMockKafka, type MockKafka } from '../support/kafka/mock-cluster.ts';
import { startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { startOwnNats, startOwnRabbit, startOwnRedis, type OwnServer } from '../support/own-servers.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';

const RETRY = { maxAttempts: 100, minBackoff: '200ms', maxBackoff: '1s', coefficient: 2 };
const EVENTS = 8;
/** Lateness a webhook may show while a broker is down: generous, the machine is shared. */
const ON_TIME_MS_MAX = 1_000;

/** A broker the test can stop and start, and read every event id that reached it. */
interface Downable {
  destination: Record<string, unknown>;
  down(): Promise<void>;
  up(): Promise<void>;
  readIds(): Promise<string[]>;
  cleanup(): Promise<void>;
}

async function ownRedis(): Promise<Downable> {
  const server: OwnServer = await startOwnRedis();
  const url = `redis://127.0.0.1:${server.port}`;
  const stream = 'belfry-down-test';
  return {
    destination: { kind: 'redis', url, stream },
    down: () => server.stop(),
    up: () => server.start(),
    async readIds() {
      const r = new Redis(url);
      try {
        const entries = (await r.xrange(stream, '-', '+')) as [string, string[]][];
        return entries.map(([, f]) => f[f.indexOf('belfry-event-id') + 1]);
      } finally {
        r.disconnect();
      }
    },
    cleanup: () => server.remove(),
  };
}

async function ownNats(): Promise<Downable> {
  const server = await startOwnNats();
  const servers = `127.0.0.1:${server.port}`;
  const stream = 'belfry_down_test';
  const subject = 'belfry.down.test';
  const nc = await connect({ servers });
  await (await jetstreamManager(nc)).streams.add({ name: stream, subjects: [subject] });
  await nc.close();
  return {
    destination: { kind: 'nats', servers: [`nats://${servers}`], subject },
    down: () => server.stop(),
    up: () => server.start(),
    async readIds() {
      const c = await connect({ servers });
      try {
        const jsm = await jetstreamManager(c);
        const total = (await jsm.streams.info(stream)).state.messages;
        const ids: string[] = [];
        for (let seq = 1; seq <= total; seq++)
          ids.push(
            (await jsm.streams.getMessage(stream, { seq }))?.header.get('belfry-event-id') ?? `(no message ${seq})`,
          );
        return ids;
      } finally {
        await c.close();
      }
    },
    cleanup: () => server.remove(),
  };
}

async function ownRabbit(): Promise<Downable> {
  const server = await startOwnRabbit();
  const url = `amqp://guest:guest@127.0.0.1:${server.port}`;
  const exchange = 'belfry-down-test';
  const queue = 'belfry-down-test';
  // Durable: the queue and the persistent messages in it outlive the restart.
  const conn = await amqp.connect(url);
  const ch = await conn.createChannel();
  await ch.assertExchange(exchange, 'direct', { durable: true });
  await ch.assertQueue(queue, { durable: true });
  await ch.bindQueue(queue, exchange, 'due');
  await conn.close();
  return {
    destination: { kind: 'amqp', url, exchange, routingKey: 'due', allowInsecureCredentials: true },
    down: () => server.stop(),
    up: () => server.start(),
    async readIds() {
      const c = await amqp.connect(url);
      try {
        const chan = await c.createChannel();
        const ids: string[] = [];
        for (;;) {
          const m = await chan.get(queue, { noAck: true });
          if (m === false) break;
          const id = m.properties.headers?.['belfry-event-id'];
          ids.push(Buffer.isBuffer(id) ? id.toString() : String(id));
        }
        return ids;
      } finally {
        await c.close();
      }
    },
    cleanup: () => server.remove(),
  };
}

async function ownKafka(): Promise<Downable> {
  const mock: MockKafka = await startMockKafka(1);
  const topic = 'belfry-down-test';
  await mock.createTopic(topic, 1);
  return {
    destination: { kind: 'kafka', brokers: mock.bootstrap.split(','), topic },
    down: () => mock.brokerDown(1),
    up: () => mock.brokerUp(1),
    async readIds() {
      const kafka = new Kafka({
        clientId: 'belfry-test',
        brokers: mock.bootstrap.split(','),
        logLevel: logLevel.NOTHING,
      });
      const admin = kafka.admin();
      await admin.connect();
      const [{ high }] = await admin.fetchTopicOffsets(topic);
      await admin.disconnect();
      const ids: string[] = [];
      const consumer = kafka.consumer({ groupId: `reader-${Date.now()}` });
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => void ids.push(String(message.headers?.['belfry-event-id'])),
      });
      await waitUntil('the topic read back', () => ids.length >= Number(high), 20_000);
      await consumer.disconnect();
      return ids;
    },
    cleanup: () => mock.stop(),
  };
}

describe('a broker that is down', { timeout: 180_000 }, () => {
  let t: TestNode;
  let rx: Receiver;
  before(async () => {
    [t, rx] = await Promise.all([startTestNode(), startReceiver()]);
    assert.equal((await t.api('PUT', '/v1/destinations/web', { url: `${rx.url}/hook` })).status, 201);
  });
  after(async () => {
    await t?.close();
    await rx?.close();
  });

  const cases: [string, () => Promise<Downable>][] = [
    ['redis', ownRedis],
    ['nats', ownNats],
    ['kafka', ownKafka],
    ['amqp', ownRabbit],
  ];
  for (const [kind, make] of cases) {
    it(`${kind}: its events wait in awaiting_retry with the error traced, the webhook stays on time, then all are delivered`, async () => {
      const broker = await make();
      try {
        const name = `down-${kind}`;
        assert.equal(
          (await t.api('PUT', `/v1/destinations/${name}`, { ...broker.destination, timeout: '1s', retry: RETRY }))
            .status,
          201,
        );
        // Mid-stream: the destination's connection is open and in use when the broker goes.
        const beforeIds = Array.from({ length: EVENTS / 2 }, (_, i) => `${kind}-before-${i}`);
        for (const id of beforeIds)
          assert.equal(
            (await t.api('POST', '/v1/events', { id, delay: 0, destination: name, payload: { id } })).status,
            201,
          );
        await waitUntil(
          `${kind}: the first events delivered`,
          async () => {
            const states = await Promise.all(
              beforeIds.map(async (id) => (await t.api('GET', `/v1/events/${id}`)).body.state),
            );
            return states.every((s) => s === 'succeeded');
          },
          20_000,
        );
        await broker.down();
        const now = Date.now();
        const brokerIds = Array.from({ length: EVENTS }, (_, i) => `${kind}-down-${i}`);
        for (const id of brokerIds)
          assert.equal(
            (await t.api('POST', '/v1/events', { id, delay: 0, destination: name, payload: { id } })).status,
            201,
          );
        const webIds = Array.from({ length: EVENTS }, (_, i) => ({
          id: `${kind}-web-${i}`,
          fireAt: now + 300 + i * 150,
        }));
        for (const e of webIds)
          assert.equal((await t.api('POST', '/v1/events', { ...e, destination: 'web', payload: {} })).status, 201);

        await waitUntil(
          `${kind}: every broker event retried`,
          async () => {
            const got = await Promise.all(brokerIds.map(async (id) => (await t.api('GET', `/v1/events/${id}`)).body));
            return got.every((e) => e.state === 'awaiting_retry' || (e.state === 'executing' && e.attempts > 1));
          },
          15_000,
        );
        const trace = (await t.api('GET', `/v1/events/${brokerIds[0]}/transitions`)).body.transitions as {
          toState: string;
          error?: string;
        }[];
        const failed = trace.find((x) => x.toState === 'awaiting_retry');
        assert.ok(failed?.error, `the error is in the trace: ${JSON.stringify(trace)}`);

        await rx.waitFor((reqs) => webIds.every((e) => reqs.some((r) => r.headers['webhook-id'] === e.id)), 15_000);
        for (const e of webIds) {
          const req = rx.requests.find((r) => r.headers['webhook-id'] === e.id)!;
          assert.ok(req.receivedAt >= e.fireAt, `${e.id} early`);
          assert.ok(
            req.receivedAt - e.fireAt <= ON_TIME_MS_MAX,
            `${e.id} ${req.receivedAt - e.fireAt} ms late while ${kind} was down`,
          );
        }
        const stillWaiting = await Promise.all(
          brokerIds.map(async (id) => (await t.api('GET', `/v1/events/${id}`)).body.state),
        );
        assert.ok(
          stillWaiting.every((s) => s !== 'succeeded'),
          `nothing succeeded while down: ${stillWaiting}`,
        );

        await broker.up();
        await waitUntil(
          `${kind}: every broker event succeeded once it was back`,
          async () => {
            const states = await Promise.all(
              brokerIds.map(async (id) => (await t.api('GET', `/v1/events/${id}`)).body.state),
            );
            return states.every((s) => s === 'succeeded');
          },
          30_000,
        );
        const ids = await broker.readIds();
        assert.deepEqual(
          [...new Set(ids)].sort(),
          [...beforeIds, ...brokerIds].sort(),
          'every event reached the broker, none lost',
        );
      } finally {
        await broker.cleanup();
      }
    });
  }
});
