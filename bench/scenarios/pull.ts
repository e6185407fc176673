/**
 * pull: pull delivery's claim → ack throughput with 1 and with 4 consumers, with acks in the next
 * claim, and by the SDK's consumer beside BullMQ's Worker; and how long an expired claim takes to
 * come back.
 *
 * - throughput: N events (default 20,000) due at once on a pull destination; C consumers (in this
 *   process, each its own keep-alive connections) each loop "claim up to 100 (wait 1s) → ack each
 *   (16 in flight)" until all N are acked. Reported: acked events/s from the first claim to the
 *   last ack, and claim calls made.
 * - batched: the same with 4 consumers that ack a claim's events in their next claim (its `ack`),
 *   one request per 100 events instead of 101.
 * - SDK consumer: `@belfry/client`'s consumer, concurrency 100, a handler that does nothing; it
 *   acks in batches (in its next claim, or a settle request).
 * - BullMQ beside it: N jobs waiting (addBulk), a Worker of concurrency 100 in this process with a
 *   processor that does nothing, jobs removed on completion: completions/s from the worker's start
 *   to the last completion. Redis is the machine's, without persistence (BullMQ's best case).
 * - comeback: 200 events claimed with a 1 s visibility timeout and never acked; one consumer
 *   claims again (wait 1s) until each is back. Reported: ms from each claim's lease end to its
 *   second claim (the expirer's pass, up to 0.5 s, plus the retry backoff, here 50-100 ms).
 */
import { randomBytes } from 'node:crypto';
import { BelfryClient } from '@belfry/client';
import { Queue, Worker } from 'bullmq';
import { connection } from '../systems/peers/bullmq.ts';
import { createClient, runConcurrently, type BenchClient } from '../lib/http.ts';
import { createBelfryStore, startBenchNode, type StoreKind } from '../lib/node.ts';
import type { ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import { distribution, perSecond } from '../lib/stats.ts';

const N_DEFAULT = 20_000;
const CLAIM_MAX = 100;
const ACKS_IN_FLIGHT = 16;
const COMEBACK_EVENTS = 200;
const DEADLINE_MS = 600_000;

interface Claimed {
  id: string;
  receipt: string;
  attempt: number;
  visibleUntil: string;
}

async function claim(c: BenchClient, body: Record<string, unknown>): Promise<Claimed[]> {
  const res = await c.call('POST', '/v1/destinations/jobs/claim', body);
  if (res.status !== 200) throw new Error(`claim: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.events as Claimed[];
}

async function schedule(c: BenchClient, prefix: string, n: number): Promise<void> {
  const now = Date.now();
  await runConcurrently(Math.ceil(n / 1000), 4, async (b) => {
    const events = [];
    for (let i = b * 1000; i < Math.min(n, (b + 1) * 1000); i++)
      events.push({ id: `${prefix}${i}`, destination: 'jobs', fireAt: now, payload: { i } });
    const res = await c.call('POST', '/v1/events/batch', { events });
    if (res.status !== 200) throw new Error(`batch: ${res.status}`);
  });
}

/** C consumers until `n` events are acked; returns acked/s and claim calls. */
async function throughput(
  url: string,
  key: string,
  consumers: number,
  n: number,
): Promise<{ perSecond: number; claims: number; ms: number }> {
  const clients = Array.from({ length: consumers }, () => createClient(url, key, ACKS_IN_FLIGHT + 1));
  let acked = 0;
  let claims = 0;
  const deadline = Date.now() + DEADLINE_MS;
  const started = performance.now();
  // The end is the last ack, not the end of a claim still waiting (up to 1 s) for events that will not come.
  let lastAckMs = NaN;
  try {
    await Promise.all(
      clients.map(async (c) => {
        while (acked < n && Date.now() < deadline) {
          const events = await claim(c, { max: CLAIM_MAX, visibilityTimeout: '60s', wait: '1s' });
          claims++;
          await runConcurrently(events.length, ACKS_IN_FLIGHT, async (i) => {
            const res = await c.call('POST', `/v1/events/${events[i].id}/ack`, { receipt: events[i].receipt });
            if (res.status !== 200) throw new Error(`ack: ${res.status} ${JSON.stringify(res.body)}`);
            if (++acked === n) lastAckMs = performance.now();
          });
        }
      }),
    );
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  const ms = lastAckMs - started;
  if (acked < n) throw new Error(`only ${acked} of ${n} acked before the deadline`);
  return { perSecond: perSecond(acked, ms), claims, ms };
}

/** C consumers that ack each claim's events in their next claim, until `n` are acked. */
async function batched(
  url: string,
  key: string,
  consumers: number,
  n: number,
): Promise<{ perSecond: number; claims: number; ms: number }> {
  const clients = Array.from({ length: consumers }, () => createClient(url, key, 2));
  let acked = 0;
  let claimed = 0;
  let claims = 0;
  const deadline = Date.now() + DEADLINE_MS;
  const started = performance.now();
  let lastAckMs = NaN;
  const settled = (res: { status: number; body: any }, count: number) => {
    if (res.status !== 200) throw new Error(`claim/settle: ${res.status} ${JSON.stringify(res.body)}`);
    const results = (res.body.settled ?? res.body.results ?? []) as { status: string }[];
    if (results.length !== count || results.some((r) => r.status !== 'settled'))
      throw new Error(`an ack failed: ${JSON.stringify(results)}`);
    acked += count;
    if (acked === n) lastAckMs = performance.now();
  };
  try {
    await Promise.all(
      clients.map(async (c) => {
        let held: Claimed[] = [];
        while (acked < n && Date.now() < deadline) {
          const ack = held.map((e) => ({ id: e.id, receipt: e.receipt }));
          held = [];
          if (claimed >= n) {
            // Everything is claimed: the last acks go alone.
            if (ack.length > 0) settled(await c.call('POST', '/v1/events/settle', { ack }), ack.length);
            break;
          }
          const res = await c.call('POST', '/v1/destinations/jobs/claim', {
            max: CLAIM_MAX,
            visibilityTimeout: '60s',
            wait: '1s',
            ...(ack.length > 0 ? { ack } : {}),
          });
          settled(res, ack.length);
          claims++;
          held = res.body.events as Claimed[];
          claimed += held.length;
        }
      }),
    );
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  const ms = lastAckMs - started;
  if (acked < n) throw new Error(`only ${acked} of ${n} acked before the deadline`);
  return { perSecond: perSecond(acked, ms), claims, ms };
}

/** The SDK's consumer (concurrency 100, a handler that does nothing) until `n` events are handled and acked. */
async function sdkConsumer(url: string, key: string, n: number): Promise<{ perSecond: number; ms: number }> {
  const belfry = new BelfryClient({ baseUrl: url, apiKey: key });
  const consumer = belfry.consumer('jobs', { concurrency: 100, visibilityTimeout: '60s', wait: '1s' });
  let handled = 0;
  let done!: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  consumer.on('*', () => {
    if (++handled === n) done();
  });
  const started = performance.now();
  await consumer.start();
  const timer = setTimeout(done, DEADLINE_MS);
  await all;
  clearTimeout(timer);
  await consumer.stop(); // sends the last acks
  const ms = performance.now() - started;
  if (handled < n) throw new Error(`only ${handled} of ${n} handled before the deadline`);
  return { perSecond: perSecond(n, ms), ms };
}

/** BullMQ's Worker (concurrency 100, a processor that does nothing) on `n` waiting jobs: completions/s. */
async function bullmqWorker(n: number): Promise<{ perSecond: number; ms: number }> {
  const prefix = `bench-pull-${randomBytes(4).toString('hex')}`;
  const queue = new Queue('pull', { connection: connection(), prefix });
  await queue.waitUntilReady();
  try {
    const opts = { removeOnComplete: true, removeOnFail: true };
    for (let i = 0; i < n; i += 1_000)
      await queue.addBulk(
        Array.from({ length: Math.min(1_000, n - i) }, (_, k) => ({ name: 'job', data: { i: i + k }, opts })),
      );
    let completed = 0;
    let done!: () => void;
    const all = new Promise<void>((resolve) => (done = resolve));
    const started = performance.now();
    const worker = new Worker('pull', async () => {}, {
      connection: connection(),
      prefix,
      concurrency: 100,
      removeOnComplete: { count: 0 },
      removeOnFail: { count: 0 },
    });
    worker.on('completed', () => {
      if (++completed === n) done();
    });
    const timer = setTimeout(done, DEADLINE_MS);
    await all;
    const ms = performance.now() - started;
    clearTimeout(timer);
    await worker.close();
    if (completed < n) throw new Error(`BullMQ: only ${completed} of ${n} completed before the deadline`);
    return { perSecond: perSecond(n, ms), ms };
  } finally {
    await queue.obliterate({ force: true });
    await queue.close();
  }
}

/** Claims COMEBACK_EVENTS with a 1 s visibility, leaves them, and times each one's second claim from its lease end. */
async function comeback(c: BenchClient): Promise<number[]> {
  await schedule(c, 'back-', COMEBACK_EVENTS);
  const leaseEnd = new Map<string, number>();
  while (leaseEnd.size < COMEBACK_EVENTS) {
    for (const e of await claim(c, { max: CLAIM_MAX, visibilityTimeout: '1s', wait: '1s' }))
      leaseEnd.set(e.id, Date.parse(e.visibleUntil));
  }
  const backMs: number[] = [];
  const deadline = Date.now() + 60_000;
  while (backMs.length < COMEBACK_EVENTS && Date.now() < deadline) {
    const events = await claim(c, { max: CLAIM_MAX, visibilityTimeout: '60s', wait: '1s' });
    const at = Date.now();
    for (const e of events) {
      if (e.attempt === 2 && leaseEnd.has(e.id)) backMs.push(at - leaseEnd.get(e.id)!);
      await c.call('POST', `/v1/events/${e.id}/ack`, { receipt: e.receipt });
    }
  }
  return backMs;
}

export async function pull(kind: StoreKind, opts: ScenarioOptions): Promise<ScenarioResult> {
  const n = opts.n ?? N_DEFAULT;
  const store = await createBelfryStore(kind);
  const node = await startBenchNode(store);
  const setup = node.client(4);
  try {
    const put = await setup.call('PUT', '/v1/destinations/jobs', {
      kind: 'pull',
      retry: { minBackoff: '100ms', maxBackoff: '100ms', maxAttempts: 10 },
    });
    if (put.status !== 201) throw new Error(`PUT pull destination: ${put.status} ${JSON.stringify(put.body)}`);
    await schedule(setup, 'one-', n);
    const cpu0 = node.cpuSeconds();
    const one = await throughput(node.url, node.key, 1, n);
    const cpu1 = node.cpuSeconds();
    await schedule(setup, 'four-', n);
    const cpu2 = node.cpuSeconds();
    const four = await throughput(node.url, node.key, 4, n);
    const cpu3 = node.cpuSeconds();
    await schedule(setup, 'batched-', n);
    const cpu4 = node.cpuSeconds();
    const fourBatched = await batched(node.url, node.key, 4, n);
    const cpu5 = node.cpuSeconds();
    await schedule(setup, 'sdk-', n);
    const cpu6 = node.cpuSeconds();
    const sdk = await sdkConsumer(node.url, node.key, n);
    const cpu7 = node.cpuSeconds();
    const back = distribution(await comeback(setup));
    const bull = await bullmqWorker(n);
    return {
      label: `pull ${n.toLocaleString('en-US')} · Belfry · ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
      scenario: 'pull',
      system: `belfry-${kind}`,
      options: { n, claimMax: CLAIM_MAX, acksInFlight: ACKS_IN_FLIGHT, comebackEvents: COMEBACK_EVENTS },
      metrics: [
        { name: 'claim→ack events/s, 1 consumer', value: one.perSecond, unit: '/s' },
        { name: 'claim→ack events/s, 4 consumers', value: four.perSecond, unit: '/s' },
        { name: 'node CPU µs per event, 1 consumer', value: ((cpu1 - cpu0) * 1e6) / n, unit: 'µs' },
        { name: 'node CPU µs per event, 4 consumers', value: ((cpu3 - cpu2) * 1e6) / n, unit: 'µs' },
        { name: 'claim→ack events/s, 4 consumers, acks in the next claim', value: fourBatched.perSecond, unit: '/s' },
        { name: 'node CPU µs per event, acks in the next claim', value: ((cpu5 - cpu4) * 1e6) / n, unit: 'µs' },
        { name: 'SDK consumer (concurrency 100) events/s', value: sdk.perSecond, unit: '/s' },
        { name: 'node CPU µs per event, SDK consumer', value: ((cpu7 - cpu6) * 1e6) / n, unit: 'µs' },
        {
          name: 'BullMQ Worker (concurrency 100) jobs/s, Redis without persistence',
          value: bull.perSecond,
          unit: '/s',
        },
        { name: 'SDK consumer ÷ BullMQ Worker', value: sdk.perSecond / bull.perSecond, unit: '×' },
        { name: 'expired claim back p50', value: back.p50, unit: 'ms' },
        { name: 'expired claim back max', value: back.max, unit: 'ms' },
        { name: 'expired claims back', value: back.count, unit: '' },
      ],
      details: { one, four, fourBatched, sdk, bullmq: bull, comebackMs: back },
    };
  } finally {
    await setup.close();
    await node.stop();
    await store.dispose();
  }
}
