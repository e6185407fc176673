/**
 * The loopback webhook receiver, run as its own process (forked by receiver-process.ts) so that
 * the driver's work cannot delay the timestamps it takes. Each delivery's payload carries the
 * event's `fireAt`; the receiver records `receivedAt - fireAt` for the first arrival of each event
 * id (the `webhook-id` header) and counts repeats as duplicates.
 *
 * `receiver-child.ts <channel>`: with a broker channel (kafka, nats, amqp, redis) it is a live
 * consumer of a fresh topic / subject / queue / stream on this machine's broker (Kafka: a mock
 * cluster it starts) instead, keyed by `belfry-event-id`, and its ready message names the
 * destination body that sends there.
 *
 * `receiver-child.ts pull <config JSON>` (PullConsumerConfig): a pull consumer takes its place,
 * Belfry's SDK consumer on a node's pull destination or BullMQ's Worker on a queue, each with the
 * given concurrency and a handler that records the event's arrival and returns (so it is acked).
 */
import { Agent, request as httpRequest } from 'node:http';
import { BelfryClient } from '@belfry/client';
import { Worker } from 'bullmq';
import {
  consumeAmqp,
  consumeKafka,
  consumeNats,
  consumeRedis,
  type BrokerConsumer,
  type OnMessage,
} from '../../test/support/brokers.ts';
import { startMockKafka, type MockKafka } from '../../test/support/kafka/mock-cluster.ts';
import { startReceiver } from '../../test/support/receiver.ts';
import { BROKER_CHANNELS, type BenchChannel } from './bench-channel.ts';

export interface ReceiverStats {
  /** Requests received, duplicates included. */
  count: number;
  /** Distinct event ids received. */
  distinct: number;
  duplicates: number;
  /** Deliveries whose receivedAt was before the payload's fireAt. */
  early: number;
  /** Deliveries whose payload had no numeric fireAt. */
  unparsed: number;
  firstAt: number | null;
  lastAt: number | null;
  /** fireAt of each distinct event with a numeric fireAt, in arrival order... */
  fireAtMs: number[];
  /** ...and its receivedAt - fireAt (ms), at the same index. */
  latenessMs: number[];
}

/** What a `pull` receiver consumes. */
export type PullConsumerConfig =
  | { system: 'belfry'; url: string; apiKey: string; destination: string; concurrency: number }
  | { system: 'bullmq'; redisUrl: string; prefix: string; queue: string; concurrency: number };

export type ChildRequest = { seq: number; type: 'count' | 'stats' | 'close' };
export type ChildMessage =
  | { type: 'ready'; url: string; destination: Record<string, unknown> | null }
  | { seq: number; stats: ReceiverStats };

const stats: ReceiverStats = {
  count: 0,
  distinct: 0,
  duplicates: 0,
  early: 0,
  unparsed: 0,
  firstAt: null,
  lastAt: null,
  fireAtMs: [],
  latenessMs: [],
};
const seen = new Set<string>();

/** Counts one arrival of event `id` whose payload is `json`. */
function record(id: string, receivedAt: number, json: unknown): void {
  stats.count++;
  stats.firstAt ??= receivedAt;
  stats.lastAt = receivedAt;
  if (seen.has(id)) {
    stats.duplicates++;
    return;
  }
  seen.add(id);
  stats.distinct++;
  // A schedule's occurrence carries its time in its id (`<schedule>@<UTC time>`), not its payload.
  const fireAt = (json as { fireAt?: unknown } | null)?.fireAt ?? occurrenceAt(id);
  if (typeof fireAt !== 'number') {
    stats.unparsed++;
    return;
  }
  if (receivedAt < fireAt) stats.early++;
  stats.fireAtMs.push(fireAt);
  stats.latenessMs.push(receivedAt - fireAt);
}

/** The time of an occurrence id `<schedule>@<UTC time>`, or undefined. */
function occurrenceAt(id: string): number | undefined {
  const at = Date.parse(id.slice(id.lastIndexOf('@') + 1));
  return id.includes('@') && Number.isFinite(at) ? at : undefined;
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
}

const channel = (process.argv[2] ?? 'http') as BenchChannel | 'pull';
let url = '';
let destination: Record<string, unknown> | null = null;
let close: () => Promise<void>;

/** The webhook-id of the receiver's own warm-up requests, which it does not count. */
const WARM_UP_ID = 'bench-receiver-warm-up';

/**
 * Before it says it is ready, the receiver answers a few rounds of its own requests, so that what
 * a step measures is the system's first deliveries, not this fresh process's (its HTTP parser and
 * handler compiled by V8 while the first events arrive).
 */
async function warmUp(target: string): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const post = () =>
    new Promise<void>((resolve, reject) => {
      const req = httpRequest(
        target,
        { method: 'POST', agent, headers: { 'content-type': 'application/json', 'webhook-id': WARM_UP_ID } },
        (res) => {
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end('{"fireAt":0}');
    });
  for (let round = 0; round < 5; round++) await Promise.all(Array.from({ length: 64 }, post));
  agent.destroy();
}

/** Starts the pull consumer of `config`; returns its stop. */
async function consumePull(config: PullConsumerConfig): Promise<() => Promise<void>> {
  if (config.system === 'belfry') {
    const belfry = new BelfryClient({ baseUrl: config.url, apiKey: config.apiKey });
    const consumer = belfry.consumer(config.destination, {
      concurrency: config.concurrency,
      visibilityTimeout: '60s',
      wait: '1s',
      onError: (err) => console.error('bench pull consumer:', err),
    });
    consumer.on('*', (event) => record(event.id, Date.now(), event.payload));
    await consumer.start();
    return () => consumer.stop();
  }
  const url = new URL(config.redisUrl);
  const worker = new Worker<{ id: string; fireAt: number }>(
    config.queue,
    async (job) => record(job.data.id, Date.now(), job.data),
    {
      connection: { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null },
      prefix: config.prefix,
      concurrency: config.concurrency,
      removeOnComplete: { count: 0 },
      removeOnFail: { count: 0 },
    },
  );
  worker.on('error', (err) => console.error('bench BullMQ worker:', err.message));
  await worker.waitUntilReady();
  return () => worker.close();
}

if (channel === 'pull') {
  close = await consumePull(JSON.parse(process.argv[3]) as PullConsumerConfig);
} else if (channel === 'http') {
  const rx = await startReceiver({
    behavior: (req) => {
      // The support receiver keeps every request; the bench needs only the numbers above, so it
      // drops them at once to keep memory flat over hundreds of thousands of deliveries.
      rx.requests.length = 0;
      const id = String(req.headers['webhook-id']);
      if (id !== WARM_UP_ID) record(id, req.receivedAt, req.json);
      return { status: 200 };
    },
  });
  url = rx.url;
  close = () => rx.close();
  await warmUp(url);
} else {
  const onMessage: OnMessage = (m) => record(m.headers['belfry-event-id'], m.receivedAt, parseJson(m.body));
  let mock: MockKafka | null = null;
  let consumer: BrokerConsumer;
  if (channel === 'kafka') {
    mock = await startMockKafka(1);
    consumer = await consumeKafka(mock.bootstrap, (name, partitions) => mock!.createTopic(name, partitions), onMessage);
  } else if (channel === 'nats') consumer = await consumeNats(undefined, onMessage);
  else if (channel === 'amqp') consumer = await consumeAmqp(undefined, onMessage);
  else if (channel === 'redis') consumer = await consumeRedis(undefined, onMessage);
  else throw new Error(`receiver-child: unknown channel "${channel}" (http, ${BROKER_CHANNELS.join(', ')})`);
  destination = consumer.destination;
  close = async () => {
    await consumer.stop();
    await mock?.stop();
  };
}

process.on('message', (msg: ChildRequest) => {
  if (msg.type === 'close') {
    void close().then(() => process.exit(0));
    return;
  }
  const reply: ChildMessage = {
    seq: msg.seq,
    stats: msg.type === 'stats' ? stats : { ...stats, fireAtMs: [], latenessMs: [] },
  };
  process.send!(reply);
});
process.on('disconnect', () => process.exit(0));
process.send!({ type: 'ready', url, destination } satisfies ChildMessage);
