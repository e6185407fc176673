/**
 * fire: N events (default 200,000) all due at one instant, scheduled in batches before it, to the
 * loopback receiver. The bench is idle while they fire. Reports deliveries per second from the
 * first delivery to the last, and the time from the due instant to the first and last delivery.
 * The wait is bounded (FIRE_WAIT_MS_MAX after the due instant, or no progress for STALL_MS): a
 * system that has not delivered everything by then is reported with what it delivered.
 * With `--channel kafka|nats|amqp|redis`, Belfry delivers to that broker and a live consumer in
 * the receiver's process counts (by `belfry-event-id`) and times the messages instead.
 */
import { cpuMetrics } from '../lib/machine.ts';
import type { ScenarioResult } from '../lib/report.ts';
import { chartSeries, perSecond, sleep } from '../lib/stats.ts';
import {
  resultLabel,
  scheduleInBatches,
  schedulingMsEstimate,
  systemCpuWindow,
  type Scenario,
  type ScenarioContext,
} from './scenario.ts';
import { waitForDeliveries } from './wait.ts';

const N_DEFAULT = 200_000;
const CONCURRENCY_DEFAULT = 4;
const LEAD_MS_MIN = 3_000;
const LEAD_MS_MAX = 90_000;
export const FIRE_WAIT_MS_MAX = 120_000;
const STALL_MS = 20_000;
const CPU_FROM_MS_BEFORE_DUE = 200;

async function run({ system, rx, opts, batchRate }: ScenarioContext): Promise<ScenarioResult> {
  const n = opts.n ?? N_DEFAULT;
  const concurrency = opts.concurrency ?? CONCURRENCY_DEFAULT;
  const leadMs = Math.min(LEAD_MS_MAX, LEAD_MS_MIN + schedulingMsEstimate(n, batchRate));
  const dueAt = Date.now() + leadMs;
  const tally = await scheduleInBatches(system, 'f', n, () => dueAt, concurrency);
  const marginMs = dueAt - Date.now();
  if (marginMs < 0) console.error(`[bench] fire: scheduling ended ${-marginMs} ms after the due instant`);
  await sleep(Math.max(0, dueAt - CPU_FROM_MS_BEFORE_DUE - Date.now()));
  const cpu = systemCpuWindow(system);
  const cpuFromAt = Date.now();
  const waited = await waitForDeliveries(
    rx!,
    tally.acknowledged,
    dueAt + (opts.waitMsMax ?? FIRE_WAIT_MS_MAX),
    STALL_MS,
  );
  const stats = await rx!.stats();
  const cpuSpent = cpu.spent(stats.distinct, (stats.lastAt ?? Date.now()) - cpuFromAt);
  const { fireAtMs, latenessMs, ...counts } = stats;
  const spanMs = (stats.lastAt ?? 0) - (stats.firstAt ?? 0);
  return {
    label: resultLabel(opts.channel && opts.channel !== 'http' ? `fire → ${opts.channel}` : 'fire', system),
    scenario: 'fire',
    system: system.info.key,
    options: { n, concurrency, leadMs, channel: opts.channel ?? 'http' },
    metrics: [
      {
        name: 'deliveries/s',
        value: perSecond(Math.max(0, stats.distinct - 1), spanMs),
        unit: '/s',
        target: opts.channel && opts.channel !== 'http' ? '≥ 20,000' : '≥ 10,000',
      },
      { name: 'due → first delivery', value: (stats.firstAt ?? NaN) - dueAt, unit: 'ms' },
      { name: 'due → last delivery', value: (stats.lastAt ?? NaN) - dueAt, unit: 'ms' },
      { name: 'undelivered', value: tally.acknowledged - stats.distinct, unit: '' },
      { name: 'early', value: stats.early, unit: '', target: '0' },
      { name: 'duplicates', value: stats.duplicates, unit: '' },
      ...cpuMetrics(cpuSpent),
    ],
    details: {
      scheduled: tally,
      dueAt,
      schedulingMarginMs: marginMs,
      receiver: counts,
      spanMs,
      waitEnded: waited,
      cpu: cpuSpent,
    },
    chart: chartSeries(fireAtMs, latenessMs, dueAt),
  };
}

export const fire: Scenario = { name: 'fire', needsReceiver: true, run };
