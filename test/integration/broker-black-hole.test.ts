/**
 * Every broker attempt lets go: thousands of deliveries to a broker that never answers leave no
 * memory and no sockets behind, for each broker kind.
 *
 * Two silent brokers per kind: a black hole (accepts TCP and never says a word, so no handshake
 * completes), and a broker whose connection is up but whose sends never get an answer (the case
 * that kept every payload queued): for Redis, RabbitMQ and NATS, a proxy to the machine's real
 * broker that lets the handshake through and swallows everything from the first publish on; for
 * Kafka (whose brokers are named by the cluster's metadata, so a proxy in front of the bootstrap
 * server would be bypassed), the mock cluster's broker told to answer every request 60 s late,
 * once the pooled connections are up.
 *
 * Each run sends waves of concurrent attempts (short timeouts, 64 KiB payloads, one string each)
 * to four destinations through a pool bounded to two connections, 500 to warm up, then
 * BELFRY_BLACK_HOLE_ATTEMPTS more (default 1,000; the figures in docs/channels.md are for 5,000),
 * and compares the heap, external memory, RSS (after full collections) and the process's open
 * sockets after the warm-up and at the end. Then it checks that the idle sweep closes every
 * connection. Each attempt must be a retry (nothing delivered, nothing discarded).
 *
 *   BELFRY_BLACK_HOLE_ATTEMPTS=5000 node --import tsx --test test/integration/broker-black-hole.test.ts
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AddressPolicy } from '../../src/core/address.ts';
import type { BrokerTarget } from '../../src/core/destination.ts';
import { brokerDueEvent, type Channel, type DeliveryOutcome, type DueEvent } from '../../src/channels/channel.ts';
import { AmqpChannel } from '../../src/channels/amqp/index.ts';
import { KafkaChannel } from '../../src/channels/kafka/index.ts';
import { NatsChannel } from '../../src/channels/nats/index.ts';
import { RedisChannel } from '../../src/channels/redis/index.ts';
import {
  blackHole,
  memorySnapshot,
  MIB,
  openSockets,
  stallingProxy,
  type BlackHole,
  type MemorySnapshot,
} from '../support/black-hole.ts';
import { startMockKafka } from '../support/kafka/mock-cluster.ts';
import { waitUntil } from '../support/node.ts';

const ATTEMPTS = Number(process.env.BELFRY_BLACK_HOLE_ATTEMPTS ?? 1_000);
const WARM_UP_ATTEMPTS = 500;
const WAVE = 100;
const TIMEOUT_MS = 100;
const DESTINATIONS = 4;
const CONNECTIONS_MAX = 2;
const IDLE_MS = 300;
const CONNECT_TIMEOUT_MS = 1_000;
const PAYLOAD_PAD = 'x'.repeat(64 * 1024);
/** What may grow between the warm-up and the end: far below what one payload per attempt would hold. */
const HEAP_GROWTH_MAX = 16 * MIB;
/**
 * RSS climbs to the process's high-water mark while waves of 100 payloads (6 MiB of strings, as
 * much in buffers) come and go, and the allocator keeps some of it: measured up to 66 MiB over
 * 5,000 attempts while the heap and buffers stayed flat. A payload held per attempt would be 320 MiB.
 */
const RSS_GROWTH_MAX = 128 * MIB;
const SOCKETS_GROWTH_MAX = 2 * CONNECTIONS_MAX + 2;

const policy = new AddressPolicy(['127.0.0.1']);
const options = { policy, idleMs: IDLE_MS, connectTimeoutMs: CONNECT_TIMEOUT_MS, connectionsMax: CONNECTIONS_MAX };
const REDIS_PORT = Number(new URL(process.env.BELFRY_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379').port || 6379);
const AMQP_PORT = Number(new URL(process.env.BELFRY_TEST_AMQP_URL ?? 'amqp://127.0.0.1:5672').port || 5672);
const NATS_PORT = Number(new URL(process.env.BELFRY_TEST_NATS_URL ?? 'nats://127.0.0.1:4222').port || 4222);

interface Kind {
  name: string;
  channel(): Channel;
  target(port: number): BrokerTarget;
  /** The real broker's port and what its first publish looks like on the wire; absent: black hole only. */
  stall?: { port: number; isPublish(chunk: Buffer): boolean };
}

/** AMQP's Basic.Publish method frame: class 60, method 40. */
const BASIC_PUBLISH = Buffer.from([0x00, 0x3c, 0x00, 0x28]);

const KINDS: Kind[] = [
  {
    name: 'redis',
    channel: () => new RedisChannel(options),
    target: (port) => ({
      kind: 'redis',
      url: `redis://127.0.0.1:${port}`,
      stream: `belfry-black-hole-${process.pid}`,
      maxLen: null,
    }),
    stall: { port: REDIS_PORT, isPublish: (c) => c.toString('latin1').toLowerCase().includes('xadd') },
  },
  {
    name: 'amqp',
    channel: () => new AmqpChannel(options),
    // No credentials in the URL: the client logs in as guest, RabbitMQ's default.
    target: (port) => ({
      kind: 'amqp',
      url: `amqp://127.0.0.1:${port}`,
      exchange: '',
      routingKey: `belfry-black-hole-${process.pid}`,
    }),
    stall: { port: AMQP_PORT, isPublish: (c) => c.includes(BASIC_PUBLISH) },
  },
  {
    name: 'nats',
    channel: () => new NatsChannel(options),
    target: (port) => ({
      kind: 'nats',
      servers: [`nats://127.0.0.1:${port}`],
      subject: `belfry.blackhole.${process.pid}`,
      token: null,
    }),
    stall: { port: NATS_PORT, isPublish: (c) => c.includes(`HPUB belfry.blackhole.${process.pid}`) },
  },
  {
    name: 'kafka',
    channel: () => new KafkaChannel(options),
    target: (port) => ({
      kind: 'kafka',
      brokers: [`127.0.0.1:${port}`],
      topic: 'belfry-black-hole',
      sasl: null,
      ssl: false,
    }),
  },
];

let seq = 0;

function event(target: BrokerTarget, destination: number, timeoutMs = TIMEOUT_MS): DueEvent {
  const n = ++seq;
  return brokerDueEvent(
    {
      tenantId: 'tenant-black-hole',
      id: `evt-${n}`,
      attempt: 1,
      // A flat string of its own per event (JSON.stringify builds one; a template literal would make
      // a rope sharing the pad): a delivery that stays held keeps its 64 KiB.
      payload: JSON.stringify({ n, pad: PAYLOAD_PAD }),
      headers: {},
      timeoutMs,
      dueAt: Date.now(),
    },
    target,
    `black-hole-${destination}`,
  );
}

/** Sends `count` attempts in waves of WAVE at once, round-robin over the destinations. */
async function send(
  channel: Channel,
  target: BrokerTarget,
  count: number,
  outcomes: Map<string, number>,
): Promise<void> {
  const signal = new AbortController().signal;
  for (let sent = 0; sent < count; sent += WAVE) {
    const wave = Array.from({ length: Math.min(WAVE, count - sent) }, (_, i) =>
      channel.deliver(event(target, i % DESTINATIONS), signal),
    );
    for (const o of await Promise.all(wave)) {
      const key = `${o.kind}: ${kindOfReason(o)}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
  }
}

/** The reason without what varies (durations): timeout, connecting too long, pool full. */
function kindOfReason(o: DeliveryOutcome): string {
  return 'reason' in o ? o.reason.replace(/\d+/g, 'N') : '';
}

const mib = (bytes: number) => `${(bytes / MIB).toFixed(1)} MiB`;

function report(name: string, before: MemorySnapshot, after: MemorySnapshot): string {
  return (
    `${name}: after ${WARM_UP_ATTEMPTS} attempts rss ${mib(before.rssBytes)}, heap ${mib(before.heapUsedBytes)}, external ${mib(before.externalBytes)}, sockets ${before.sockets}` +
    ` · after ${ATTEMPTS} more rss ${mib(after.rssBytes)}, heap ${mib(after.heapUsedBytes)}, external ${mib(after.externalBytes)}, sockets ${after.sockets}`
  );
}

/**
 * Warm-up, snapshot, the attempts, snapshot, then the checks. `server` counts the connections
 * when the silent broker is this process's (null for the Kafka mock cluster: the process's own
 * sockets are counted then). `prepare` runs first (the Kafka case opens its connections).
 */
async function run(
  kind: Kind,
  what: string,
  target: BrokerTarget,
  server: BlackHole | null,
  prepare?: (channel: Channel) => Promise<void>,
): Promise<Map<string, number>> {
  const channel = kind.channel();
  const outcomes = new Map<string, number>();
  try {
    const baselineSockets = (await memorySnapshot()).sockets;
    await prepare?.(channel);
    await send(channel, target, WARM_UP_ATTEMPTS, outcomes);
    const before = await memorySnapshot();
    await send(channel, target, ATTEMPTS, outcomes);
    // Sockets destroyed by the client close on the server's side a moment later.
    if (server)
      await waitUntil(
        `${kind.name}: at most ${CONNECTIONS_MAX} connections open at the ${what}`,
        () => server.open <= CONNECTIONS_MAX,
        5_000,
      );
    const after = await memorySnapshot();
    console.log(
      `${report(`${kind.name} (${what})`, before, after)} · ${server ? `${server.accepted} connections made · ` : ''}outcomes ${JSON.stringify(Object.fromEntries(outcomes))}`,
    );

    const total = [...outcomes.values()].reduce((a, b) => a + b, 0);
    assert.equal(total, WARM_UP_ATTEMPTS + ATTEMPTS);
    for (const key of outcomes.keys()) assert.match(key, /^retry: /, `every attempt is a retry: ${key}`);
    const heapGrowth = after.heapUsedBytes + after.externalBytes - (before.heapUsedBytes + before.externalBytes);
    assert.ok(
      heapGrowth < HEAP_GROWTH_MAX,
      `${kind.name}: heap and buffers grew by ${mib(heapGrowth)} over ${ATTEMPTS} attempts`,
    );
    assert.ok(
      after.rssBytes - before.rssBytes < RSS_GROWTH_MAX,
      `${kind.name}: RSS grew by ${mib(after.rssBytes - before.rssBytes)} over ${ATTEMPTS} attempts`,
    );
    if (before.sockets !== null && after.sockets !== null) {
      assert.ok(
        after.sockets - before.sockets <= SOCKETS_GROWTH_MAX,
        `${kind.name}: ${after.sockets - before.sockets} more sockets open`,
      );
    }
    // Idle connections close: nothing of the silent broker is left open a moment after the last attempt.
    if (server)
      await waitUntil(
        `${kind.name}: every connection to the ${what} closed when idle`,
        () => server.open === 0,
        5 * IDLE_MS + 5_000,
      );
    if (baselineSockets !== null)
      await waitUntil(
        `${kind.name}: the process's sockets back to where they were`,
        () => (openSockets() ?? 0) <= baselineSockets,
        5_000,
      );
    return outcomes;
  } finally {
    await channel.close();
  }
}

describe('broker channels: thousands of attempts to a broker that never answers hold nothing', () => {
  for (const kind of KINDS) {
    describe(kind.name, () => {
      let hole: BlackHole;
      before(async () => {
        hole = await blackHole();
      });
      after(async () => {
        await hole?.close();
      });

      it(`black hole (accepts, never answers): ${WARM_UP_ATTEMPTS} + ${ATTEMPTS} attempts, memory and sockets flat, idle connections closed`, async () => {
        await run(kind, 'black hole', kind.target(hole.port), hole);
      });

      if (kind.stall) {
        const stall = kind.stall;
        it(`handshake done, publishes never answered: each connection whose sends time out is closed and rebuilt, memory and sockets flat`, async () => {
          const proxy = await stallingProxy(stall.port, stall.isPublish);
          try {
            await run(kind, 'stalling proxy', kind.target(proxy.port), proxy);
            assert.ok(
              proxy.stalled >= 2,
              `${kind.name}: publishes reached the broker's connection and stalled (${proxy.stalled} connections)`,
            );
            assert.ok(
              proxy.accepted >= 2,
              `${kind.name}: a connection whose sends timed out was rebuilt (${proxy.accepted} connections made)`,
            );
          } finally {
            await proxy.close();
          }
        });
      }

      if (kind.name === 'kafka') {
        it('connections up, then every request answered 60 s late: each connection whose sends time out is closed and rebuilt, memory and sockets flat', async () => {
          const mock = await startMockKafka(1);
          try {
            const topic = `belfry-black-hole-${process.pid}`;
            await mock.createTopic(topic, 1);
            const target: BrokerTarget = {
              kind: 'kafka',
              brokers: mock.bootstrap.split(','),
              topic,
              sasl: null,
              ssl: false,
            };
            const outcomes = await run(kind, 'slow broker', target, null, async (channel) => {
              const signal = new AbortController().signal;
              for (let d = 0; d < CONNECTIONS_MAX; d++) {
                const first = await channel.deliver(event(target, d, 10_000), signal);
                assert.equal(first.kind, 'delivered', JSON.stringify(first));
              }
              await mock.brokerRtt(1, 60_000);
            });
            // The sends still waiting on a connection that was closed for a timed-out one failed at once.
            assert.ok(
              [...outcomes.keys()].some((k) => k.includes('connection closed by Belfry')),
              JSON.stringify(Object.fromEntries(outcomes)),
            );
          } finally {
            await mock.stop();
          }
        });
      }
    });
  }
});
