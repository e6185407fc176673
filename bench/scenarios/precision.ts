/**
 * precision: a steady R events/s (default 1,000) due over D (default 60 s), after a 3 s warm-up at
 * the same rate. Every 100 ms the bench schedules, in batch calls, the events due in a 100 ms
 * window 5 s later, spread evenly over it. The receiver (its own process) measures lateness =
 * receivedAt - fireAt. Reports p50/p90/p99/max lateness of the events due after the warm-up, the
 * warm-up's own max, the p99 of the events due in the first 500 ms of firing (a node's first
 * second is where its tail was), the warm-up's p99 and max per 500 ms in the details, and how many
 * arrived early (must be 0).
 * With `--channel kafka|nats|amqp|redis`, Belfry delivers to that broker (default rate 5,000/s):
 * a live consumer in the receiver's process takes the place of the webhook receiver, so the
 * lateness runs from the due time to the consumer's receipt, the broker's acknowledgement of the
 * publish included.
 */
import { cpuMetrics, CpuWindow } from '../lib/machine.ts';
import type { ReceiverStats } from '../lib/receiver-child.ts';
import type { ScenarioResult } from '../lib/report.ts';
import type { BatchTally } from '../lib/schedule.ts';
import { chartSeries, distribution, sleep } from '../lib/stats.ts';
import { BATCH_SIZE, benchEvents, DATABASE_SERVER } from '../systems/system.ts';
import { resultLabel, type Scenario, type ScenarioContext } from './scenario.ts';
import { waitForDeliveries } from './wait.ts';

const RATE_DEFAULT = 1_000;
const DURATION_MS_DEFAULT = 60_000;
/**
 * Due times before the measured window, at the same rate: the first seconds of firing into a
 * fresh system and receiver (JIT, new connections) run late, then catch up. Their max lateness is
 * still reported ("warm-up lateness max").
 */
const WARMUP_MS = 3_000;
const TICK_MS = 100;
/** The first stretch of firing whose p99 is reported on its own. */
const FIRST_MS = 500;
/** How long before its due time each event is scheduled (plus up to one tick). */
const LEAD_MS = 5_000;
/** Bound on the wait for deliveries after the last due time. */
const DRAIN_MS_MAX = 30_000;
const STALL_MS = 15_000;

/** The receiver's lateness samples split by due time into warm-up and measured. */
function split(
  stats: ReceiverStats,
  measuredFromAt: number,
): { warmup: number[]; measured: number[]; measuredFireAt: number[] } {
  const warmup: number[] = [];
  const measured: number[] = [];
  const measuredFireAt: number[] = [];
  stats.fireAtMs.forEach((fireAt, i) => {
    if (fireAt < measuredFromAt) warmup.push(stats.latenessMs[i]);
    else {
      measured.push(stats.latenessMs[i]);
      measuredFireAt.push(fireAt);
    }
  });
  return { warmup, measured, measuredFireAt };
}

async function run({ system, rx, opts }: ScenarioContext): Promise<ScenarioResult> {
  const broker = opts.channel !== undefined && opts.channel !== 'http';
  const rate = opts.rate ?? RATE_DEFAULT;
  const durationMs = opts.durationMs ?? DURATION_MS_DEFAULT;
  const spanMs = WARMUP_MS + durationMs;
  const total = Math.floor((rate * spanMs) / 1000);
  const startAt = Date.now() + TICK_MS;
  const firstDueAt = startAt + LEAD_MS;
  const measuredFromAt = firstDueAt + WARMUP_MS;
  const dueAt = (j: number) => firstDueAt + Math.floor((j * 1000) / rate);
  const tally: BatchTally = { acknowledged: 0, failed: 0 };
  const calls: Promise<void>[] = [];
  let tickLateMsMax = 0;
  let cpu: CpuWindow | null = null;
  for (let k = 0; k * TICK_MS < spanMs; k++) {
    const tickAt = startAt + k * TICK_MS;
    await sleep(Math.max(0, tickAt - Date.now()));
    tickLateMsMax = Math.max(tickLateMsMax, Date.now() - tickAt);
    if (cpu === null && Date.now() >= measuredFromAt)
      cpu = new CpuWindow(() => system.cpuSeconds(), DATABASE_SERVER[system.info.key]);
    // Events j with j * 1000 / rate in [k * TICK_MS, (k + 1) * TICK_MS): due in this tick's window.
    const from = Math.ceil((k * TICK_MS * rate) / 1000);
    const to = Math.min(total, Math.ceil(((k + 1) * TICK_MS * rate) / 1000));
    for (let b = from; b < to; b += BATCH_SIZE)
      calls.push(
        system.scheduleBatch(benchEvents(opts.idPrefix ?? 'p', b, Math.min(to, b + BATCH_SIZE), dueAt), tally),
      );
  }
  await Promise.all(calls);
  if (cpu === null) {
    await sleep(Math.max(0, measuredFromAt - Date.now()));
    cpu = new CpuWindow(() => system.cpuSeconds(), DATABASE_SERVER[system.info.key]);
  }
  const waited = await waitForDeliveries(rx!, tally.acknowledged, dueAt(total - 1) + DRAIN_MS_MAX, STALL_MS);
  const stats = await rx!.stats();
  const { fireAtMs: _f, latenessMs: _l, ...counts } = stats;
  const samples = split(stats, measuredFromAt);
  // Per event due in the measured window; the window also holds the scheduling of most of them.
  const cpuSpent = cpu.spent(samples.measured.length, (stats.lastAt ?? Date.now()) - measuredFromAt);
  const lateness = distribution(samples.measured);
  const warmup = distribution(samples.warmup);
  // The warm-up by 500 ms of due times: where a fresh node's lateness goes.
  const windows: number[][] = Array.from({ length: Math.ceil(WARMUP_MS / FIRST_MS) }, () => []);
  stats.fireAtMs.forEach((fireAt, i) => {
    const w = Math.floor((fireAt - firstDueAt) / FIRST_MS);
    if (w >= 0 && w < windows.length) windows[w].push(stats.latenessMs[i]);
  });
  const warmupWindows = windows.map((w, i) => {
    const d = distribution(w);
    return { fromMs: i * FIRST_MS, count: d.count, p99: d.p99, max: d.max };
  });
  const first = distribution(windows[0]);
  return {
    label: resultLabel(`precision @ ${rate}/s${broker ? ` → ${opts.channel}` : ''}`, system),
    scenario: `precision@${rate}${broker ? `→${opts.channel}` : ''}`,
    system: system.info.key,
    options: {
      rate,
      durationMs,
      warmupMs: WARMUP_MS,
      leadMs: LEAD_MS,
      tickMs: TICK_MS,
      channel: opts.channel ?? 'http',
    },
    metrics: [
      { name: 'lateness p50', value: lateness.p50, unit: 'ms' },
      { name: 'lateness p90', value: lateness.p90, unit: 'ms' },
      { name: 'lateness p99', value: lateness.p99, unit: 'ms', target: rate >= 5_000 ? '≤ 25' : undefined },
      { name: 'lateness max', value: lateness.max, unit: 'ms' },
      { name: 'warm-up lateness max', value: warmup.max, unit: 'ms' },
      {
        name: `first ${FIRST_MS} ms of firing: lateness p99`,
        value: first.p99,
        unit: 'ms',
        target: rate >= 5_000 ? '≤ 25' : undefined,
      },
      { name: 'early', value: counts.early, unit: '', target: '0' },
      { name: 'undelivered', value: tally.acknowledged - counts.distinct, unit: '' },
      { name: 'duplicates', value: counts.duplicates, unit: '' },
      ...cpuMetrics(cpuSpent, '', true),
    ],
    details: {
      total,
      scheduled: tally,
      tickLateMsMax,
      receiver: counts,
      latenessMs: lateness,
      warmupLatenessMs: warmup,
      warmupWindows,
      waitEnded: waited,
      cpu: cpuSpent,
    },
    chart: chartSeries(samples.measuredFireAt, samples.measured, measuredFromAt),
  };
}

export const precision: Scenario = { name: 'precision', needsReceiver: true, run };
