/**
 * burst (Belfry only): N events (default 1,000,000) due within one minute, spread evenly over it,
 * all scheduled before the minute starts (batches of 1,000, 4 in flight). Reports the time from
 * the end of that minute until the last is delivered (target: all within the minute plus 60 s),
 * the delivery rate, and lateness.
 */
import type { StoreKind } from '../lib/node.ts';
import { startReceiverProcess } from '../lib/receiver-process.ts';
import type { ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import { chartSeries, distribution, perSecond, sleep } from '../lib/stats.ts';
import { cpuMetrics } from '../lib/machine.ts';
import { startSystem } from '../systems/index.ts';
import { resultLabel, scheduleInBatches, schedulingMsEstimate, systemCpuWindow } from './scenario.ts';
import { waitForDeliveries } from './wait.ts';

const N_DEFAULT = 1_000_000;
const WINDOW_MS = 60_000;
const CONCURRENCY = 4;
const LEAD_MS_MIN = 5_000;
/** Bound on the wait: the minute, the target's 60 s, and 60 s more to see how late a miss is. */
const WAIT_AFTER_WINDOW_MS = 120_000;
const STALL_MS = 20_000;

export async function burst(
  store: StoreKind,
  opts: ScenarioOptions,
  batchRate: number | null,
): Promise<ScenarioResult> {
  const n = opts.n ?? N_DEFAULT;
  const rx = await startReceiverProcess();
  const system = await startSystem(store === 'sqlite' ? 'belfry-sqlite' : 'belfry-postgres', {
    receiverUrl: rx.url,
    connections: CONCURRENCY,
  });
  try {
    const leadMs = LEAD_MS_MIN + schedulingMsEstimate(n, batchRate);
    const windowAt = Date.now() + leadMs;
    const dueAt = (i: number) => windowAt + Math.floor((i * WINDOW_MS) / n);
    console.error(
      `[bench] burst: ${n.toLocaleString('en-US')} events due in the minute from +${(leadMs / 1000).toFixed(0)} s`,
    );
    const startedMs = performance.now();
    const tally = await scheduleInBatches(system, 'u', n, dueAt, CONCURRENCY);
    const schedulingMs = performance.now() - startedMs;
    const marginMs = windowAt - Date.now();
    if (marginMs < 0) console.error(`[bench] burst: scheduling ended ${-marginMs} ms into the minute`);
    await sleep(Math.max(0, windowAt - Date.now()));
    const cpu = systemCpuWindow(system);
    const waited = await waitForDeliveries(
      rx,
      tally.acknowledged,
      windowAt + WINDOW_MS + WAIT_AFTER_WINDOW_MS,
      STALL_MS,
    );
    const stats = await rx.stats();
    const cpuSpent = cpu.spent(stats.distinct, (stats.lastAt ?? Date.now()) - windowAt);
    const { fireAtMs, latenessMs, ...counts } = stats;
    const lateness = distribution(latenessMs);
    const windowEndAt = windowAt + WINDOW_MS;
    return {
      label: resultLabel(`burst ${n.toLocaleString('en-US')} in a minute`, system),
      scenario: 'burst',
      system: system.info.key,
      options: { n, windowMs: WINDOW_MS, concurrency: CONCURRENCY, leadMs },
      metrics: [
        { name: 'events', value: n, unit: '' },
        {
          name: 'minute end → last delivery',
          value: ((stats.lastAt ?? NaN) - windowEndAt) / 1000,
          unit: 's',
          target: '≤ 60',
        },
        {
          name: 'deliveries/s',
          value: perSecond(Math.max(0, stats.distinct - 1), (stats.lastAt ?? 0) - (stats.firstAt ?? 0)),
          unit: '/s',
        },
        { name: 'lateness p50', value: lateness.p50, unit: 'ms' },
        { name: 'lateness p99', value: lateness.p99, unit: 'ms' },
        { name: 'lateness max', value: lateness.max, unit: 'ms' },
        { name: 'undelivered', value: tally.acknowledged - stats.distinct, unit: '' },
        { name: 'early', value: stats.early, unit: '', target: '0' },
        {
          name: 'duplicates',
          value: stats.duplicates,
          unit: '',
          target: `≤ ${Math.floor(n / 1000).toLocaleString('en-US')} (0.1%)`,
        },
        { name: 'scheduling events/s', value: perSecond(tally.acknowledged, schedulingMs), unit: '/s' },
        ...cpuMetrics(cpuSpent),
        { name: 'node peak RSS', value: system.peakRssBytes() / 2 ** 20, unit: 'MiB' },
      ],
      details: {
        scheduled: tally,
        windowAt,
        schedulingMarginMs: marginMs,
        receiver: counts,
        latenessMs: lateness,
        waitEnded: waited,
        cpu: cpuSpent,
        logIssues: system.logIssues?.(),
      },
      chart: chartSeries(fireAtMs, latenessMs, windowAt),
    };
  } finally {
    await system.stop();
    await rx.close();
  }
}
