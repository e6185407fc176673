/**
 * ingest-single: N events (default 50,000) through POST /v1/events, one per request, from C
 * concurrent keep-alive clients (default 64). Events are due a day from now. Reports requests per
 * second and the latency of each request as the driver saw it.
 */
import { nodeCpuMetric, type BenchNode } from '../lib/node.ts';
import type { BenchClient } from '../lib/http.ts';
import { runConcurrently } from '../lib/http.ts';
import type { ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import { distribution, perSecond } from '../lib/stats.ts';

const N_DEFAULT = 50_000;
const CONCURRENCY_DEFAULT = 64;
const WARMUP_REQUESTS = 1_000;
const DAY_MS = 86_400_000;

interface Tally {
  acknowledged: number;
  failed: number;
  error?: string;
  latencyMs: Float64Array;
}

async function postAll(client: BenchClient, bodies: string[], concurrency: number): Promise<Tally> {
  const tally: Tally = { acknowledged: 0, failed: 0, latencyMs: new Float64Array(bodies.length) };
  await runConcurrently(bodies.length, concurrency, async (i) => {
    const startedMs = performance.now();
    try {
      const res = await client.call('POST', '/v1/events', bodies[i]);
      if (res.status === 201 || res.status === 200) tally.acknowledged++;
      else {
        tally.failed++;
        tally.error ??= `HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
      }
    } catch (err) {
      tally.failed++;
      tally.error ??= String(err);
    }
    tally.latencyMs[i] = performance.now() - startedMs;
  });
  return tally;
}

export async function ingestSingle(node: BenchNode, opts: ScenarioOptions): Promise<ScenarioResult> {
  const n = opts.n ?? N_DEFAULT;
  const concurrency = opts.concurrency ?? CONCURRENCY_DEFAULT;
  await node.putDestination('bench', 'http://127.0.0.1:9/', 20);
  const client = node.client(concurrency);
  try {
    const dueAt = Date.now() + DAY_MS;
    const bodies = (count: number, tag: string) =>
      Array.from({ length: count }, (_, i) => JSON.stringify({ fireAt: dueAt + i, destination: 'bench', payload: { [tag]: i } }));
    await postAll(client, bodies(WARMUP_REQUESTS, 'warmup'), concurrency);
    const measured = bodies(n, 'i');
    const cpuStart = node.cpuSeconds();
    const startedMs = performance.now();
    const tally = await postAll(client, measured, concurrency);
    const elapsedMs = performance.now() - startedMs;
    const cpu = nodeCpuMetric(node.cpuSeconds() - cpuStart, elapsedMs);
    const latency = distribution(tally.latencyMs);
    return {
      label: 'ingest-single',
      scenario: 'ingest-single',
      options: { n, concurrency },
      metrics: [
        { name: 'requests/s (acknowledged)', value: perSecond(tally.acknowledged, elapsedMs), unit: '/s', target: '≥ 10,000' },
        { name: 'latency p50', value: latency.p50, unit: 'ms' },
        { name: 'latency p99', value: latency.p99, unit: 'ms' },
        { name: 'latency max', value: latency.max, unit: 'ms' },
        { name: 'failed', value: tally.failed, unit: '' },
        cpu,
      ],
      details: { acknowledged: tally.acknowledged, failed: tally.failed, error: tally.error, elapsedMs, latencyMs: latency },
    };
  } finally {
    await client.close();
  }
}
