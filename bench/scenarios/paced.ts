/**
 * paced: a due stream of R events/s (10,000, 20,000 and 25,000, or `--rate`) for D (10 s, or
 * `--duration`) to one destination that takes at most 100 deliveries at once (Belfry: the
 * destination's `maxConcurrency`; a peer: its worker's concurrency, and its POSTs held to 100).
 * No warm-up: the stream starts on a fresh system, as a user's does. Scheduled as `precision`
 * schedules (100 ms ticks, 5 s ahead, batch calls).
 *
 * - webhook (`paced`): every system, delivering to the loopback receiver.
 * - pull (`pacedPull`): Belfry's SDK consumer (concurrency 100) on a pull destination, on each
 *   store, beside BullMQ's Worker (concurrency 100) on delayed jobs; each consumer in a process
 *   of its own, recording each event's arrival in a handler that returns at once (so it is acked).
 *
 * Reported per system and rate: whether it kept up (every event delivered, and the events due in
 * the stream's last second delivered with p99 lateness ≤ 1 s: lateness did not pile up), the
 * delivery rate (events ÷ first due → last delivery), lateness p50/p99/max, CPU per event.
 */
import { bullmq, QUEUE } from '../systems/peers/bullmq.ts';
import { belfryOnNode } from '../systems/belfry.ts';
import { DATABASE_SERVER, type System } from '../systems/system.ts';
import { runDueStream, type DueStream } from '../lib/due-stream.ts';
import { cpuMetrics, processCpuSeconds } from '../lib/machine.ts';
import { createBelfryStore, startBenchNode, type StoreKind } from '../lib/node.ts';
import { freshSchemaName, REDIS_URL } from '../lib/pg.ts';
import { startReceiverProcess } from '../lib/receiver-process.ts';
import type { Metric, ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import type { BatchTally } from '../lib/schedule.ts';
import { chartSeries, distribution, perSecond } from '../lib/stats.ts';
import { resultLabel, type Scenario, type ScenarioContext } from './scenario.ts';

export const PACED_RATES = [10_000, 20_000, 25_000];
const DURATION_MS_DEFAULT = 10_000;
/** Deliveries in flight at most, for every system. */
export const PACED_MAX_CONCURRENCY = 100;
/** Lateness the stream's last second may reach, at p99, for a system that kept up. */
const KEPT_UP_P99_MS_MAX = 1_000;

function pacedMetrics(stream: DueStream, rate: number, consumerCpuS?: number): Metric[] {
  const { stats, tally } = stream;
  const lateness = distribution(stream.measured);
  const last = distribution(stream.measured.filter((_, i) => stream.measuredFireAt[i] > stream.lastDueAt - 1_000));
  const undelivered = tally.acknowledged - stats.distinct;
  const keptUp = undelivered === 0 && tally.failed === 0 && last.p99 <= KEPT_UP_P99_MS_MAX;
  const rateMs = (stats.lastAt ?? Date.now()) - stream.firstDueAt;
  return [
    { name: 'kept up', value: keptUp ? 1 : 0, unit: 'yes=1', target: rate >= 25_000 ? '1' : undefined },
    { name: 'delivered events/s', value: perSecond(stats.distinct, rateMs), unit: '/s' },
    { name: 'lateness p50', value: lateness.p50, unit: 'ms' },
    { name: 'lateness p99', value: lateness.p99, unit: 'ms', target: rate >= 25_000 ? '≤ 100' : undefined },
    { name: 'lateness max', value: lateness.max, unit: 'ms' },
    { name: 'last second lateness p99', value: last.p99, unit: 'ms' },
    { name: 'undelivered', value: undelivered, unit: '' },
    { name: 'duplicates', value: stats.duplicates, unit: '' },
    { name: 'early', value: stats.early, unit: '', target: '0' },
    ...cpuMetrics(stream.cpu),
    ...(consumerCpuS === undefined
      ? []
      : [{ name: 'consumer CPU µs per event', value: (consumerCpuS * 1e6) / stats.distinct, unit: 'µs' }]),
  ];
}

function pacedDetails(stream: DueStream) {
  const { fireAtMs: _f, latenessMs: _l, ...receiver } = stream.stats;
  return {
    total: stream.total,
    scheduled: stream.tally,
    tickLateMsMax: stream.tickLateMsMax,
    receiver,
    latenessMs: distribution(stream.measured),
    waitEnded: stream.waited,
    cpu: stream.cpu,
  };
}

async function run({ system, rx, opts }: ScenarioContext): Promise<ScenarioResult> {
  const rate = opts.rate ?? PACED_RATES[0];
  const durationMs = opts.durationMs ?? DURATION_MS_DEFAULT;
  const stream = await runDueStream(system, rx!, {
    rate,
    warmupMs: 0,
    durationMs,
    idPrefix: 'paced-',
    databaseServer: DATABASE_SERVER[system.info.key],
  });
  return {
    label: resultLabel(`paced @ ${rate.toLocaleString('en-US')}/s`, system),
    scenario: `paced@${rate}`,
    system: system.info.key,
    options: { rate, durationMs, maxConcurrency: PACED_MAX_CONCURRENCY },
    metrics: pacedMetrics(stream, rate),
    details: pacedDetails(stream),
    chart: chartSeries(stream.measuredFireAt, stream.measured, stream.firstDueAt),
  };
}

export const paced: Scenario = { name: 'paced', needsReceiver: true, run };

export type PacedPullSystem = 'belfry-sqlite' | 'belfry-postgres' | 'bullmq';

/** The paced stream to a pull consumer of `key`, at `opts.rate`. */
export async function pacedPull(key: PacedPullSystem, opts: ScenarioOptions): Promise<ScenarioResult> {
  const rate = opts.rate ?? PACED_RATES[0];
  const durationMs = opts.durationMs ?? DURATION_MS_DEFAULT;
  const concurrency = PACED_MAX_CONCURRENCY;
  const cleanup: (() => Promise<void>)[] = [];
  try {
    let system: Pick<System, 'scheduleBatch' | 'cpuSeconds'> & { label: string };
    let consumerPid: number | undefined;
    let rx: Awaited<ReturnType<typeof startReceiverProcess>>;
    if (key === 'bullmq') {
      const prefix = freshSchemaName('bullmq-pull');
      const driver = await bullmq.openDriver(prefix);
      cleanup.unshift(() => driver.close());
      rx = await startReceiverProcess({ system: 'bullmq', redisUrl: REDIS_URL, prefix, queue: QUEUE, concurrency });
      cleanup.unshift(() => rx.close());
      consumerPid = rx.pid;
      system = {
        label: 'BullMQ · Redis (Worker)',
        async scheduleBatch(events, tally: BatchTally) {
          try {
            await driver.scheduleBatch(events);
            tally.acknowledged += events.length;
          } catch (err) {
            tally.failed += events.length;
            tally.error ??= String(err);
          }
        },
        // The Worker moves delayed jobs and runs them: its process fires.
        cpuSeconds: () => processCpuSeconds(consumerPid),
      };
    } else {
      const kind: StoreKind = key === 'belfry-sqlite' ? 'sqlite' : 'postgres';
      const store = await createBelfryStore(kind);
      cleanup.unshift(() => store.dispose());
      const node = await startBenchNode(store);
      cleanup.unshift(() => node.stop());
      const setup = node.client(1);
      const put = await setup.call('PUT', '/v1/destinations/jobs', { kind: 'pull' });
      await setup.close();
      if (put.status !== 201) throw new Error(`PUT pull destination: ${put.status} ${JSON.stringify(put.body)}`);
      rx = await startReceiverProcess({
        system: 'belfry',
        url: node.url,
        apiKey: node.key,
        destination: 'jobs',
        concurrency,
      });
      cleanup.unshift(() => rx.close());
      consumerPid = rx.pid;
      const onNode = belfryOnNode(node, 'jobs', 64, async () => {});
      cleanup.unshift(() => onNode.stop());
      system = {
        label: `Belfry · ${kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'} (SDK consumer)`,
        scheduleBatch: onNode.scheduleBatch,
        cpuSeconds: onNode.cpuSeconds,
      };
    }
    const consumerCpu0 = key === 'bullmq' ? NaN : processCpuSeconds(consumerPid);
    const stream = await runDueStream(system, rx, {
      rate,
      warmupMs: 0,
      durationMs,
      idPrefix: 'pull-',
      databaseServer: key === 'bullmq' ? 'redis-server' : DATABASE_SERVER[key],
    });
    const consumerCpuS = key === 'bullmq' ? undefined : processCpuSeconds(consumerPid) - consumerCpu0;
    return {
      label: `paced pull @ ${rate.toLocaleString('en-US')}/s · ${system.label}`,
      scenario: `paced-pull@${rate}`,
      system: key,
      options: { rate, durationMs, concurrency },
      metrics: pacedMetrics(stream, rate, consumerCpuS),
      details: pacedDetails(stream),
      chart: chartSeries(stream.measuredFireAt, stream.measured, stream.firstDueAt),
    };
  } finally {
    for (const step of cleanup) await step();
  }
}
