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
import { runDueStream, LEAD_MS, TICK_MS } from '../lib/due-stream.ts';
import { cpuMetrics } from '../lib/machine.ts';
import type { ScenarioResult } from '../lib/report.ts';
import { chartSeries, distribution } from '../lib/stats.ts';
import { DATABASE_SERVER } from '../systems/system.ts';
import { resultLabel, type Scenario, type ScenarioContext } from './scenario.ts';

const RATE_DEFAULT = 1_000;
const DURATION_MS_DEFAULT = 60_000;
/**
 * Due times before the measured window, at the same rate: the first seconds of firing into a
 * fresh system and receiver (JIT, new connections) run late, then catch up. Their max lateness is
 * still reported ("warm-up lateness max").
 */
const WARMUP_MS = 3_000;
/** The first stretch of firing whose p99 is reported on its own. */
const FIRST_MS = 500;

async function run({ system, rx, opts }: ScenarioContext): Promise<ScenarioResult> {
  const broker = opts.channel !== undefined && opts.channel !== 'http';
  const rate = opts.rate ?? RATE_DEFAULT;
  const durationMs = opts.durationMs ?? DURATION_MS_DEFAULT;
  const stream = await runDueStream(system, rx!, {
    rate,
    warmupMs: WARMUP_MS,
    durationMs,
    idPrefix: opts.idPrefix ?? 'p',
    databaseServer: DATABASE_SERVER[system.info.key],
  });
  const { stats, tally, firstDueAt, measuredFromAt } = stream;
  const { fireAtMs: _f, latenessMs: _l, ...counts } = stats;
  const lateness = distribution(stream.measured);
  const warmup = distribution(stream.warmup);
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
      ...cpuMetrics(stream.cpu, '', true),
    ],
    details: {
      total: stream.total,
      scheduled: tally,
      tickLateMsMax: stream.tickLateMsMax,
      receiver: counts,
      latenessMs: lateness,
      warmupLatenessMs: warmup,
      warmupWindows,
      waitEnded: stream.waited,
      cpu: stream.cpu,
    },
    chart: chartSeries(stream.measuredFireAt, stream.measured, measuredFromAt),
  };
}

export const precision: Scenario = { name: 'precision', needsReceiver: true, run };
