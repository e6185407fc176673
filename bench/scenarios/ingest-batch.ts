/**
 * ingest-batch: N events (default 200,000) through POST /v1/events/batch, 1,000 per request, from
 * C concurrent clients (default 4). Every event is due a day from now, so nothing fires while
 * measuring. Reports acknowledged (durable) events per second.
 */
import { nodeCpuMetric, type BenchNode } from '../lib/node.ts';
import type { ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import { batchBodies, postBatches } from '../lib/schedule.ts';
import { perSecond } from '../lib/stats.ts';

const N_DEFAULT = 200_000;
const CONCURRENCY_DEFAULT = 4;
/** Events posted before measuring, so JIT and SQLite page cache are warm. */
const WARMUP_EVENTS = 5_000;
const DAY_MS = 86_400_000;

export async function ingestBatch(node: BenchNode, opts: ScenarioOptions): Promise<ScenarioResult> {
  const n = opts.n ?? N_DEFAULT;
  const concurrency = opts.concurrency ?? CONCURRENCY_DEFAULT;
  // Never called: the events are due long after the run ends.
  await node.putDestination('bench', 'http://127.0.0.1:9/', 20);
  const client = node.client(concurrency);
  try {
    const dueAt = Date.now() + DAY_MS;
    const make = (prefix: string) => (i: number) => ({ fireAt: dueAt + i, destination: 'bench', payload: { [prefix]: i } });
    await postBatches(client, batchBodies(WARMUP_EVENTS, make('warmup')), concurrency);
    const bodies = batchBodies(n, make('i'));
    const cpuStart = node.cpuSeconds();
    const startedMs = performance.now();
    const tally = await postBatches(client, bodies, concurrency);
    const elapsedMs = performance.now() - startedMs;
    const cpu = nodeCpuMetric(node.cpuSeconds() - cpuStart, elapsedMs);
    return {
      label: 'ingest-batch',
      scenario: 'ingest-batch',
      options: { n, concurrency, batchSize: 1000 },
      metrics: [
        { name: 'events/s (acknowledged)', value: perSecond(tally.acknowledged, elapsedMs), unit: '/s', target: '≥ 100,000' },
        { name: 'elapsed', value: elapsedMs / 1000, unit: 's' },
        { name: 'failed', value: tally.failed, unit: '' },
        cpu,
      ],
      details: { ...tally, elapsedMs },
    };
  } finally {
    await client.close();
  }
}
