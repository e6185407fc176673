/**
 * fire: N events (default 100,000) all due at one instant a few seconds after scheduling starts,
 * to a loopback receiver in its own process (destination maxConcurrency 256). The driver is idle
 * while they fire. Reports deliveries per second from the first delivery to the last, and the time
 * from the due instant to the last delivery.
 */
import { nodeCpuMetric, type BenchNode } from '../lib/node.ts';
import { startReceiverProcess } from '../lib/receiver-process.ts';
import type { ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import { batchBodies, postBatches } from '../lib/schedule.ts';
import { perSecond, sleep } from '../lib/stats.ts';

const N_DEFAULT = 100_000;
const CONCURRENCY_DEFAULT = 4;
const MAX_CONCURRENCY = 256;
/** Lead from the start of scheduling to the due instant: 3 s plus 1 ms per 20 events (scheduling at ≥ 20,000/s). */
const LEAD_MS_MIN = 3_000;
const LEAD_EVENTS_PER_MS = 20;
/** Bound on the wait for the last delivery: 60 s plus 1 ms per event (≥ 1,000 deliveries/s). */
const WAIT_MS_MIN = 60_000;
const CPU_FROM_MS_BEFORE_DUE = 200;

export async function fire(node: BenchNode, opts: ScenarioOptions): Promise<ScenarioResult> {
  const n = opts.n ?? N_DEFAULT;
  const concurrency = opts.concurrency ?? CONCURRENCY_DEFAULT;
  const rx = await startReceiverProcess();
  const client = node.client(concurrency);
  try {
    await node.putDestination('rx', rx.url, MAX_CONCURRENCY);
    const dueAt = Date.now() + LEAD_MS_MIN + Math.ceil(n / LEAD_EVENTS_PER_MS);
    const tally = await postBatches(client, batchBodies(n, () => ({ fireAt: dueAt, destination: 'rx', payload: { fireAt: dueAt } })), concurrency);
    const marginMs = dueAt - Date.now();
    if (marginMs < 0) console.warn(`fire: scheduling ended ${-marginMs} ms after the due instant; raise the lead`);
    // CPU from just before the due instant to the last delivery.
    await sleep(Math.max(0, dueAt - CPU_FROM_MS_BEFORE_DUE - Date.now()));
    const cpuStart = node.cpuSeconds();
    const cpuFromAt = Date.now();
    await rx.waitForDistinct(tally.acknowledged, dueAt + WAIT_MS_MIN + n);
    const stats = await rx.stats();
    const cpu = nodeCpuMetric(node.cpuSeconds() - cpuStart, (stats.lastAt ?? NaN) - cpuFromAt);
    const { fireAtMs: _f, latenessMs: _l, ...counts } = stats;
    const spanMs = (stats.lastAt ?? 0) - (stats.firstAt ?? 0);
    return {
      label: 'fire',
      scenario: 'fire',
      options: { n, concurrency, maxConcurrency: MAX_CONCURRENCY },
      metrics: [
        { name: 'deliveries/s (first→last)', value: perSecond(Math.max(0, stats.distinct - 1), spanMs), unit: '/s', target: '≥ 10,000' },
        { name: 'due → first delivery', value: (stats.firstAt ?? NaN) - dueAt, unit: 'ms' },
        { name: 'due → last delivery', value: (stats.lastAt ?? NaN) - dueAt, unit: 'ms' },
        { name: 'missing', value: tally.acknowledged - stats.distinct, unit: '' },
        { name: 'early', value: stats.early, unit: '', target: '0' },
        { name: 'duplicates', value: stats.duplicates, unit: '' },
        cpu,
      ],
      details: { scheduled: tally, dueAt, schedulingMarginMs: marginMs, receiver: counts, spanMs },
    };
  } finally {
    await client.close();
    await rx.close();
  }
}
