/**
 * precision: a steady R events/s (default 1,000) due over D (default 30 s), after a 3 s warm-up at
 * the same rate. Every 100 ms the driver schedules, in one batch request, the events due in a
 * 100 ms window 5 s later, spread evenly over it; each payload carries its fireAt. The receiver
 * (its own process) measures lateness = receivedAt - fireAt. Reports p50/p90/p99/max lateness of
 * the events due after the warm-up, the warm-up's own max, and how many arrived early (must be 0).
 */
import { nodeCpuMetric, type BenchNode } from '../lib/node.ts';
import { startReceiverProcess } from '../lib/receiver-process.ts';
import type { ReceiverStats } from '../lib/receiver-child.ts';
import type { ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import { batchBodies, postBatch, type BatchTally } from '../lib/schedule.ts';
import { distribution, sleep } from '../lib/stats.ts';

const RATE_DEFAULT = 1_000;
const DURATION_MS_DEFAULT = 30_000;
/**
 * Due times before the measured window, at the same rate: the first seconds of firing into a
 * fresh node and receiver (JIT, 256 new connections) ran 0.3–1.3 s late at 5,000/s in trial runs,
 * then caught up. Their max lateness is still reported ("warm-up lateness max").
 */
const WARMUP_MS = 3_000;
const TICK_MS = 100;
/** How long before its due time each event is scheduled (plus up to one tick). */
const LEAD_MS = 5_000;
/** Bound on the wait for deliveries after the last due time. */
const DRAIN_MS_MAX = 30_000;
const MAX_CONCURRENCY = 256;

/** Splits the receiver's lateness samples into warm-up and measured by due time. */
function split(stats: ReceiverStats, measuredFromAt: number): { warmup: number[]; measured: number[] } {
  const warmup: number[] = [];
  const measured: number[] = [];
  stats.fireAtMs.forEach((fireAt, i) => (fireAt < measuredFromAt ? warmup : measured).push(stats.latenessMs[i]));
  return { warmup, measured };
}

export async function precision(node: BenchNode, opts: ScenarioOptions): Promise<ScenarioResult> {
  const rate = opts.rate ?? RATE_DEFAULT;
  const durationMs = opts.durationMs ?? DURATION_MS_DEFAULT;
  const spanMs = WARMUP_MS + durationMs;
  const total = Math.floor((rate * spanMs) / 1000);
  const rx = await startReceiverProcess();
  const client = node.client(opts.concurrency ?? 4);
  try {
    await node.putDestination('rx', rx.url, MAX_CONCURRENCY);
    const startAt = Date.now() + TICK_MS;
    const firstDueAt = startAt + LEAD_MS;
    const measuredFromAt = firstDueAt + WARMUP_MS;
    const dueAt = (j: number) => firstDueAt + Math.floor((j * 1000) / rate);
    const tally: BatchTally = { acknowledged: 0, failed: 0 };
    const posts: Promise<void>[] = [];
    let tickLateMsMax = 0;
    let cpuStart = NaN;
    for (let k = 0; k * TICK_MS < spanMs; k++) {
      const tickAt = startAt + k * TICK_MS;
      await sleep(Math.max(0, tickAt - Date.now()));
      tickLateMsMax = Math.max(tickLateMsMax, Date.now() - tickAt);
      if (Number.isNaN(cpuStart) && Date.now() >= measuredFromAt) cpuStart = node.cpuSeconds();
      // Events j with j * 1000 / rate in [k * TICK_MS, (k + 1) * TICK_MS): due in this tick's window.
      const from = Math.ceil((k * TICK_MS * rate) / 1000);
      const to = Math.min(total, Math.ceil(((k + 1) * TICK_MS * rate) / 1000));
      const bodies = batchBodies(to - from, (i) => ({ fireAt: dueAt(from + i), destination: 'rx', payload: { fireAt: dueAt(from + i) } }));
      for (const body of bodies) posts.push(postBatch(client, body, tally));
    }
    await Promise.all(posts);
    if (Number.isNaN(cpuStart)) {
      await sleep(Math.max(0, measuredFromAt - Date.now()));
      cpuStart = node.cpuSeconds();
    }
    await rx.waitForDistinct(tally.acknowledged, dueAt(total - 1) + DRAIN_MS_MAX);
    const stats = await rx.stats();
    const cpu = nodeCpuMetric(node.cpuSeconds() - cpuStart, (stats.lastAt ?? NaN) - measuredFromAt);
    const { fireAtMs: _f, latenessMs: _l, ...counts } = stats;
    const samples = split(stats, measuredFromAt);
    const lateness = distribution(samples.measured);
    const warmup = distribution(samples.warmup);
    return {
      label: `precision @ ${rate}/s`,
      scenario: 'precision',
      options: { rate, durationMs, warmupMs: WARMUP_MS, leadMs: LEAD_MS, tickMs: TICK_MS, maxConcurrency: MAX_CONCURRENCY },
      metrics: [
        { name: 'lateness p50', value: lateness.p50, unit: 'ms' },
        { name: 'lateness p90', value: lateness.p90, unit: 'ms' },
        { name: 'lateness p99', value: lateness.p99, unit: 'ms', target: '≤ 25 (at 5,000/s)' },
        { name: 'lateness max', value: lateness.max, unit: 'ms' },
        { name: 'warm-up lateness max', value: warmup.max, unit: 'ms' },
        { name: 'early', value: counts.early, unit: '', target: '0' },
        { name: 'missing', value: tally.acknowledged - counts.distinct, unit: '' },
        { name: 'duplicates', value: counts.duplicates, unit: '' },
        cpu,
      ],
      details: { total, scheduled: tally, tickLateMsMax, receiver: counts, latenessMs: lateness, warmupLatenessMs: warmup },
    };
  } finally {
    await client.close();
    await rx.close();
  }
}
