/**
 * Live consumers of the machine's brokers for tests: each makes its own stream / subject / queue /
 * topic, records every message with the time it arrived, and removes what it made on stop().
 */
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';

export const REDIS_URL = process.env.BELFRY_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const NATS_URL = process.env.BELFRY_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
export const AMQP_URL = process.env.BELFRY_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

export interface Consumed {
  body: Buffer;
  headers: Record<string, string>;
  /** Date.now() when the consumer got it. */
  receivedAt: number;
}

/** Instead of keeping every message (`messages`), hand each to this (a benchmark's counter). */
export type OnMessage = (m: Consumed) => void;

export interface BrokerConsumer {
  /** The destination body that sends here. */
  destination: Record<string, unknown>;
  messages: Consumed[];
  stop(): Promise<void>;
}

let n = 0;
const unique = (prefix: string) => `${prefix}-${process.pid}-${Date.now().toString(36)}-${++n}`;

/** Reads a fresh Redis stream with XREAD BLOCK on its own connection. */
export async function consumeRedis(url = REDIS_URL, onMessage?: OnMessage): Promise<BrokerConsumer> {
  const stream = unique('belfry-test');
  const reader = new Redis(url, { maxRetriesPerRequest: null });
  reader.on('error', () => {});
  const messages: Consumed[] = [];
  const take: OnMessage = onMessage ?? ((m) => void messages.push(m));
  let stopped = false;
  let last = '0';
  const loop = (async () => {
    while (!stopped) {
      const res = (await reader.xreadBuffer('BLOCK', 200, 'STREAMS', stream, last).catch(() => null)) as
        | [Buffer, [Buffer, Buffer[]][]][]
        | null;
      for (const [, entries] of res ?? []) {
        for (const [id, flat] of entries) {
          last = id.toString();
          const headers: Record<string, string> = {};
          let body: Buffer = Buffer.alloc(0);
          for (let i = 0; i < flat.length; i += 2) {
            if (flat[i].toString() === 'payload') body = flat[i + 1];
            else headers[flat[i].toString()] = flat[i + 1].toString();
          }
          take({ body, headers, receivedAt: Date.now() });
        }
      }
    }
  })();
  return {
    destination: { kind: 'redis', url, stream },
    messages,
    async stop() {
      stopped = true;
      await loop;
      await reader.del(stream).catch(() => {});
      reader.disconnect();
    },
  };
}

/** A fresh JetStream stream on its own subject, read by an ordered push of every message. */
export async function consumeNats(url = NATS_URL, onMessage?: OnMessage): Promise<BrokerConsumer> {
  const name = unique('belfry_test').replace(/-/g, '_');
  const subject = `belfry.test.${name}`;
  const nc = await connect({ servers: url.replace('nats://', '') });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name, subjects: [subject] });
  const messages: Consumed[] = [];
  const take: OnMessage = onMessage ?? ((m) => void messages.push(m));
  const consumer = await jetstream(nc).consumers.get(name);
  const sub = await consumer.consume();
  void (async () => {
    for await (const m of sub) {
      const headers: Record<string, string> = {};
      for (const k of m.headers?.keys() ?? []) headers[k] = m.headers!.get(k);
      take({ body: Buffer.from(m.data), headers, receivedAt: Date.now() });
    }
  })();
  return {
    destination: { kind: 'nats', servers: [url], subject },
    messages,
    async stop() {
      await sub.close().catch(() => {});
      await jsm.streams.delete(name).catch(() => false);
      await nc.close();
    },
  };
}

/** A fresh exchange with a queue bound for routing key `due`, consumed live. */
export async function consumeAmqp(url = AMQP_URL, onMessage?: OnMessage): Promise<BrokerConsumer> {
  const exchange = unique('belfry-test-x');
  const queue = unique('belfry-test-q');
  const conn = await amqp.connect(url);
  const ch = await conn.createChannel();
  await ch.assertExchange(exchange, 'direct', { durable: false });
  await ch.assertQueue(queue, { durable: false });
  await ch.bindQueue(queue, exchange, 'due');
  const messages: Consumed[] = [];
  const take: OnMessage = onMessage ?? ((m) => void messages.push(m));
  await ch.consume(
    queue,
    (m) => {
      if (!m) return;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(m.properties.headers ?? {}))
        headers[k] = Buffer.isBuffer(v) ? v.toString() : String(v);
      take({ body: m.content, headers, receivedAt: Date.now() });
    },
    { noAck: true },
  );
  return {
    // The machine's RabbitMQ listens without TLS: its guest login goes in clear, said explicitly.
    destination: { kind: 'amqp', url, exchange, routingKey: 'due', allowInsecureCredentials: true },
    messages,
    async stop() {
      await ch.deleteQueue(queue).catch(() => {});
      await ch.deleteExchange(exchange).catch(() => {});
      await conn.close().catch(() => {});
    },
  };
}

const FETCH_WAIT_MS = 20;

/** A fresh topic (created through `createTopic`) read by a consumer group from the beginning. */
export async function consumeKafka(
  bootstrap: string,
  createTopic: (name: string, partitions: number) => Promise<void>,
  onMessage?: OnMessage,
): Promise<BrokerConsumer> {
  const topic = unique('belfry-test');
  await createTopic(topic, 3);
  const brokers = bootstrap.split(',');
  const kafka = new Kafka({ clientId: 'belfry-test', brokers, logLevel: logLevel.NOTHING });
  // librdkafka's mock broker answers a fetch that found nothing only after its whole max wait, even
  // when messages arrive meanwhile: with KafkaJS's default (5 s) a message could sit up to 5 s
  // before this consumer saw it, which the precision bench would count as Belfry's lateness.
  const consumer = kafka.consumer({ groupId: `${topic}-reader`, maxWaitTimeInMs: FETCH_WAIT_MS });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const messages: Consumed[] = [];
  const take: OnMessage = onMessage ?? ((m) => void messages.push(m));
  await consumer.run({
    eachMessage: async ({ message }) => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = String(v);
      take({ body: message.value ?? Buffer.alloc(0), headers, receivedAt: Date.now() });
    },
  });
  return {
    destination: { kind: 'kafka', brokers, topic },
    messages,
    stop: () => consumer.disconnect(),
  };
}
