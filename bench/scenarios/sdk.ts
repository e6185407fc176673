/**
 * sdk: creating events as an application does, one call per event from many concurrent handlers,
 * through @belfry/client against BullMQ's `queue.add()`: C (64) concurrent callers, N (50,000)
 * events each way, every acknowledgement durable:
 *   1. Belfry on SQLite (a node process with its defaults: every acknowledged write fsynced, WAL
 *      with synchronous=FULL) through the SDK, batching on (its default: concurrent creates share a
 *      POST /v1/events/batch), then off (one POST /v1/events per create) for reference;
 *   2. BullMQ 6 `queue.add()` (a delayed job, as the ingest scenario's) on a redis-server this step
 *      starts on a free port with `--appendonly yes --appendfsync always` (an add is on disk before
 *      it is answered), then with `--appendfsync everysec` (Redis' default for an append-only file:
 *      an answered add may be lost with the last second), then on the machine's shared Redis, which
 *      keeps nothing on disk here.
 * Each Redis' persistence settings are read from it (CONFIG GET) and shown in its label. Every
 * event is due a day ahead: nothing fires, and no worker runs. A warm-up precedes each phase, and
 * `sync` (the kernel's dirty pages to disk) each system.
 * Target: Belfry's SDK with batching ≥ 1.25 × BullMQ's add() on the durable Redis.
 */
import { execFileSync } from 'node:child_process';
import { BelfryClient } from '@belfry/client';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { startOwnRedis } from '../../test/support/own-servers.ts';
import { runConcurrently } from '../lib/http.ts';
import { cpuMetrics, CpuWindow, type CpuSpent } from '../lib/machine.ts';
import { createBelfryStore, startBenchNode } from '../lib/node.ts';
import { REDIS_URL } from '../lib/pg.ts';
import type { Metric, ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import { distribution, perSecond, type Distribution } from '../lib/stats.ts';
import { BELFRY_MAX_CONCURRENCY, belfryEventBody, NOWHERE_URL } from '../systems/belfry.ts';
import { connection, jobOf } from '../systems/peers/bullmq.ts';
import type { BenchEvent } from '../systems/system.ts';

const N_DEFAULT = 50_000;
const CALLERS_DEFAULT = 64;
const WARMUP_EVENTS = 3_000;
/** Without batching a create is one request: fewer events measure its rate as well. */
const UNBATCHED_DIVISOR = 4;
const DAY_MS = 86_400_000;
export const SDK_TARGET_RATIO = 1.25;

interface Phase {
  acknowledged: number;
  failed: number;
  error?: string;
  elapsedMs: number;
  latencyMs: Distribution;
  cpu: CpuSpent;
}

/** `n` calls of `create(event)` from `callers` concurrent loops, each timed. */
async function measure(
  n: number,
  callers: number,
  prefix: string,
  create: (e: BenchEvent) => Promise<unknown>,
  cpu: () => CpuWindow,
): Promise<Phase> {
  const dueAt = Date.now() + DAY_MS;
  const latency = new Float64Array(n);
  let acknowledged = 0;
  let failed = 0;
  let error: string | undefined;
  const window = cpu();
  const startedMs = performance.now();
  await runConcurrently(n, callers, async (i) => {
    const t0 = performance.now();
    try {
      await create({ id: `${prefix}${i}`, fireAt: dueAt + i });
      acknowledged++;
    } catch (err) {
      failed++;
      error ??= String(err).slice(0, 300);
    }
    latency[i] = performance.now() - t0;
  });
  const elapsedMs = performance.now() - startedMs;
  return { acknowledged, failed, error, elapsedMs, latencyMs: distribution(latency), cpu: window.spent(acknowledged) };
}

function phaseMetrics(p: Phase, extra: Metric[] = []): Metric[] {
  return [
    { name: 'creates/s', value: perSecond(p.acknowledged, p.elapsedMs), unit: '/s' },
    ...extra,
    { name: 'create latency p50', value: p.latencyMs.p50, unit: 'ms' },
    { name: 'create latency p99', value: p.latencyMs.p99, unit: 'ms' },
    { name: 'failed', value: p.failed, unit: '' },
    ...cpuMetrics(p.cpu, '', true),
  ];
}

/** "appendonly yes, appendfsync always, save ''": the persistence settings the server reports. */
async function persistenceOf(redisUrl: string): Promise<string> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const parts: string[] = [];
    for (const name of ['appendonly', 'appendfsync', 'save']) {
      const [, value] = (await redis.config('GET', name)) as string[];
      parts.push(`${name} ${value === '' ? "''" : value}`);
    }
    return parts.join(', ');
  } finally {
    redis.disconnect();
  }
}

async function belfryPhases(n: number, callers: number): Promise<{ batched: Phase; single: Phase; requests: number }> {
  const store = await createBelfryStore('sqlite');
  const node = await startBenchNode(store);
  try {
    await node.putDestination('rx', NOWHERE_URL, BELFRY_MAX_CONCURRENCY);
    let requests = 0;
    const counting: typeof fetch = (input, init) => {
      requests++;
      return fetch(input, init);
    };
    const batching = new BelfryClient({ baseUrl: node.url, apiKey: node.key, fetch: counting });
    const unbatched = new BelfryClient({ baseUrl: node.url, apiKey: node.key, batching: false });
    const create = (client: BelfryClient) => (e: BenchEvent) => client.events.create(belfryEventBody(e, 'rx'));
    const cpu = () => new CpuWindow(() => node.cpuSeconds(), null);

    await measure(WARMUP_EVENTS, callers, 'wb', create(batching), cpu);
    execFileSync('sync');
    requests = 0;
    const batched = await measure(n, callers, 'b', create(batching), cpu);
    const batchedRequests = requests;
    await measure(WARMUP_EVENTS, callers, 'ws', create(unbatched), cpu);
    execFileSync('sync');
    const single = await measure(Math.ceil(n / UNBATCHED_DIVISOR), callers, 's', create(unbatched), cpu);
    return { batched, single, requests: batchedRequests };
  } finally {
    await node.stop();
    await store.dispose();
  }
}

async function bullmqPhase(redisUrl: string, n: number, callers: number): Promise<Phase> {
  const queue = new Queue('sdk', {
    connection: connection(redisUrl),
    prefix: `bench-sdk-${process.pid}-${Date.now()}`,
  });
  try {
    await queue.waitUntilReady();
    const add = (e: BenchEvent) => {
      const job = jobOf(e, Date.now());
      return queue.add(job.name, job.data, job.opts);
    };
    const cpu = () => new CpuWindow(() => NaN, 'redis-server');
    await measure(WARMUP_EVENTS, callers, 'w', add, cpu);
    execFileSync('sync');
    return await measure(n, callers, 'a', add, cpu);
  } finally {
    await queue.obliterate({ force: true });
    await queue.close();
  }
}

export async function sdk(opts: ScenarioOptions): Promise<ScenarioResult[]> {
  const n = opts.n ?? N_DEFAULT;
  const callers = opts.concurrency ?? CALLERS_DEFAULT;
  const options = { n, callers, unbatched: Math.ceil(n / UNBATCHED_DIVISOR) };

  const belfry = await belfryPhases(n, callers);
  const ownRedisPhase = async (appendfsync: 'always' | 'everysec') => {
    const own = await startOwnRedis(appendfsync);
    try {
      const url = `redis://127.0.0.1:${own.port}`;
      return { setting: await persistenceOf(url), phase: await bullmqPhase(url, n, callers) };
    } finally {
      await own.remove();
    }
  };
  const { setting: durableSetting, phase: durable } = await ownRedisPhase('always');
  const { setting: everysecSetting, phase: everysec } = await ownRedisPhase('everysec');
  const sharedSetting = await persistenceOf(REDIS_URL);
  const shared = await bullmqPhase(REDIS_URL, n, callers);

  const rate = (p: Phase) => perSecond(p.acknowledged, p.elapsedMs);
  const sdkRate = rate(belfry.batched);
  const result = (label: string, system: string, metrics: Metric[], details: Record<string, unknown>) => ({
    label: `sdk · ${label}`,
    scenario: 'sdk',
    system,
    options,
    metrics,
    details,
  });
  return [
    result(
      `Belfry · SQLite (synchronous=FULL) · @belfry/client, batching on`,
      'belfry-sqlite',
      phaseMetrics(belfry.batched, [
        { name: 'events per request', value: belfry.batched.acknowledged / belfry.requests, unit: '' },
        {
          name: '× BullMQ add(), durable Redis',
          value: sdkRate / rate(durable),
          unit: '×',
          target: `≥ ${SDK_TARGET_RATIO}`,
        },
        { name: '× BullMQ add(), Redis appendfsync everysec', value: sdkRate / rate(everysec), unit: '×' },
        { name: '× BullMQ add(), Redis without persistence', value: sdkRate / rate(shared), unit: '×' },
      ]),
      { ...belfry.batched, requests: belfry.requests },
    ),
    result(
      `Belfry · SQLite (synchronous=FULL) · @belfry/client, batching: false`,
      'belfry-sqlite',
      phaseMetrics(belfry.single),
      { ...belfry.single },
    ),
    result(`BullMQ add() · own Redis (${durableSetting})`, 'bullmq', phaseMetrics(durable), {
      ...durable,
      persistence: durableSetting,
    }),
    result(`BullMQ add() · own Redis (${everysecSetting})`, 'bullmq', phaseMetrics(everysec), {
      ...everysec,
      persistence: everysecSetting,
    }),
    result(`BullMQ add() · shared Redis (${sharedSetting})`, 'bullmq', phaseMetrics(shared), {
      ...shared,
      persistence: sharedSetting,
    }),
  ];
}
