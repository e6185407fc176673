/** The AMQP channel against the machine's RabbitMQ (:5672, guest), through the Channel conformance suite. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import amqp from 'amqplib';
import { AddressPolicy } from '../../core/address.ts';
import { channelConformance, dueEvent, type Sink } from '../conformance/suite.ts';
import { AmqpChannel } from './index.ts';
import type { Channel } from '../channel.ts';

const AMQP_URL = process.env.BELFRY_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
let n = 0;

function fields(url: string, exchange: string, routingKey = 'due'): Sink['fields'] {
  // The machine's RabbitMQ listens without TLS: its guest login is sent in clear, by choice.
  const target = { kind: 'amqp' as const, url, exchange, routingKey, allowInsecureCredentials: true };
  return { kind: 'amqp', target, poolKey: `amqp-test-${++n}` };
}

function headersOf(msg: amqp.GetMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(msg.properties.headers ?? {}))
    out[k] = Buffer.isBuffer(v) ? v.toString() : String(v);
  return out;
}

let admin: amqp.ChannelModel;
let ch: amqp.Channel;
const exchanges: string[] = [];
const queues: string[] = [];

channelConformance('amqp', async () => {
  admin = await amqp.connect(AMQP_URL);
  ch = await admin.createChannel();
  const channel = new AmqpChannel({ policy: new AddressPolicy(['127.0.0.1']) });
  return {
    channel,
    belfryHeaders: true,
    idOf: (m) => m.headers['belfry-event-id'],
    async sink() {
      const exchange = `belfry-test-x-${process.pid}-${++n}`;
      const queue = `belfry-test-q-${process.pid}-${n}`;
      await ch.assertExchange(exchange, 'direct', { durable: false });
      await ch.assertQueue(queue, { durable: false });
      await ch.bindQueue(queue, exchange, 'due');
      exchanges.push(exchange);
      queues.push(queue);
      const got: { body: Buffer; headers: Record<string, string> }[] = [];
      return {
        fields: fields(AMQP_URL, exchange),
        async read(count, timeoutMs) {
          const deadline = Date.now() + timeoutMs;
          while (got.length < count && Date.now() < deadline) {
            const m = await ch.get(queue, { noAck: true });
            if (m) got.push({ body: m.content, headers: headersOf(m) });
            else await new Promise((r) => setTimeout(r, 20));
          }
          return got;
        },
        cleanup: async () => {
          await ch.deleteQueue(queue);
          await ch.deleteExchange(exchange);
        },
      };
    },
    // No such exchange: the broker closes the channel with 404 NOT_FOUND.
    refusing: async () => fields(AMQP_URL, `belfry-test-missing-${process.pid}-${++n}`),
    at: (port) => fields(`amqp://guest:guest@127.0.0.1:${port}`, 'belfry-test-nowhere'),
    async close() {
      await channel.close();
      for (const q of queues) await ch.deleteQueue(q).catch(() => {});
      for (const x of exchanges) await ch.deleteExchange(x).catch(() => {});
      await admin.close();
    },
  };
});

it('amqp: an unroutable message (no queue bound for its key) is a retry, never a silent drop', async () => {
  const conn = await amqp.connect(AMQP_URL);
  const c = await conn.createChannel();
  const exchange = `belfry-test-x-${process.pid}-unroutable`;
  await c.assertExchange(exchange, 'direct', { durable: false });
  const channel: Channel = new AmqpChannel({ policy: new AddressPolicy(['127.0.0.1']) });
  try {
    const outcome = await channel.deliver(
      dueEvent(fields(AMQP_URL, exchange, 'nobody-listens')),
      new AbortController().signal,
    );
    assert.equal(outcome.kind, 'retry', JSON.stringify(outcome));
    assert.match((outcome as { reason: string }).reason, /unroutable/);
  } finally {
    await channel.close();
    await c.deleteExchange(exchange);
    await conn.close();
  }
});
