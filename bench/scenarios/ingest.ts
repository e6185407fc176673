/**
 * ingest: how fast a system takes events it durably acknowledges, two ways, on one fresh system:
 *   1. batch: N (200,000) events in calls of 1,000 (Belfry: POST /v1/events/batch; peers: their
 *      bulk call), 4 calls in flight;
 *   2. single: M (N / 8) events one per call (Belfry: POST /v1/events), from 64 concurrent clients;
 *   3. Belfry only: the batch step again with `Prefer: return=minimal` (each item answered by id
 *      and version, not the whole event), beside the default. Peers' bulk calls answer as they
 *      always do (pg-boss nothing, BullMQ and graphile-worker their jobs).
 * Every event is due a day from now, so nothing fires while measuring. Each phase is preceded by a
 * small warm-up (JIT, caches, connections).
 */
import { runConcurrently } from '../lib/http.ts';
import { cpuMetrics, type CpuSpent } from '../lib/machine.ts';
import type { Metric, ScenarioResult } from '../lib/report.ts';
import { distribution, perSecond } from '../lib/stats.ts';
import type { System } from '../systems/system.ts';
import { resultLabel, scheduleInBatches, systemCpuWindow, type Scenario, type ScenarioContext } from './scenario.ts';

const N_DEFAULT = 200_000;
const BATCH_CONCURRENCY = 4;
const SINGLE_CONCURRENCY = 64;
/** Single calls are N / 8 (25,000 by default): enough for a steady rate and a p99, in seconds even for the slowest peer. */
const SINGLES_DIVISOR = 8;
const WARMUP_BATCH_EVENTS = 5_000;
const WARMUP_SINGLE_EVENTS = 1_000;
const DAY_MS = 86_400_000;

interface SingleTally {
  acknowledged: number;
  failed: number;
  error?: string;
  latencyMs: Float64Array;
}

async function scheduleSingles(
  system: System,
  prefix: string,
  n: number,
  dueAt: number,
  concurrency: number,
): Promise<SingleTally> {
  const tally: SingleTally = { acknowledged: 0, failed: 0, latencyMs: new Float64Array(n) };
  await runConcurrently(n, concurrency, async (i) => {
    const startedMs = performance.now();
    try {
      await system.scheduleOne({ id: `${prefix}${i}`, fireAt: dueAt + i });
      tally.acknowledged++;
    } catch (err) {
      tally.failed++;
      tally.error ??= String(err).slice(0, 300);
    }
    tally.latencyMs[i] = performance.now() - startedMs;
  });
  return tally;
}

async function run({ system, opts }: ScenarioContext): Promise<ScenarioResult> {
  const n = opts.n ?? N_DEFAULT;
  const singles = Math.max(1, Math.floor(n / SINGLES_DIVISOR));
  const batchConcurrency = opts.concurrency ?? BATCH_CONCURRENCY;
  const dueAt = Date.now() + DAY_MS;

  await scheduleInBatches(system, 'wb', WARMUP_BATCH_EVENTS, (i) => dueAt + i, batchConcurrency);
  let cpu = systemCpuWindow(system);
  let startedMs = performance.now();
  const batch = await scheduleInBatches(system, 'b', n, (i) => dueAt + i, batchConcurrency);
  const batchMs = performance.now() - startedMs;
  const batchCpu = cpu.spent(batch.acknowledged);

  await scheduleSingles(system, 'ws', WARMUP_SINGLE_EVENTS, dueAt, SINGLE_CONCURRENCY);
  cpu = systemCpuWindow(system);
  startedMs = performance.now();
  const single = await scheduleSingles(system, 's', singles, dueAt, SINGLE_CONCURRENCY);
  const singleMs = performance.now() - startedMs;
  const singleCpu = cpu.spent(single.acknowledged);
  const latency = distribution(single.latencyMs);

  let minimal: {
    tally: Awaited<ReturnType<typeof scheduleInBatches>>;
    ms: number;
    cpu: CpuSpent;
  } | null = null;
  if (system.scheduleBatchMinimal) {
    const scheduleMinimal = system.scheduleBatchMinimal.bind(system);
    cpu = systemCpuWindow(system);
    startedMs = performance.now();
    const tally = await scheduleInBatches(system, 'm', n, (i) => dueAt + i, batchConcurrency, scheduleMinimal);
    const ms = performance.now() - startedMs;
    minimal = { tally, ms, cpu: cpu.spent(tally.acknowledged) };
  }

  const metrics: Metric[] = [
    { name: 'batch events/s', value: perSecond(batch.acknowledged, batchMs), unit: '/s', target: '≥ 100,000' },
    { name: 'single requests/s', value: perSecond(single.acknowledged, singleMs), unit: '/s', target: '≥ 10,000' },
    { name: 'single latency p50', value: latency.p50, unit: 'ms' },
    { name: 'single latency p99', value: latency.p99, unit: 'ms' },
    ...(minimal
      ? [
          {
            name: 'batch events/s, Prefer: return=minimal',
            value: perSecond(minimal.tally.acknowledged, minimal.ms),
            unit: '/s',
            target: '≥ 100,000',
          },
        ]
      : []),
    { name: 'failed', value: batch.failed + single.failed + (minimal?.tally.failed ?? 0), unit: '' },
    // A peer's worker does not run during ingest (its client is the bench): database CPU only,
    // and the bench client's CPU per event beside it.
    ...cpuMetrics(batchCpu, 'batch: ', true),
    ...cpuMetrics(singleCpu, 'single: ', true),
    ...(minimal ? cpuMetrics(minimal.cpu, 'batch, return=minimal: ', true) : []),
  ];
  return {
    label: resultLabel('ingest', system),
    scenario: 'ingest',
    system: system.info.key,
    options: { n, singles, batchSize: 1000, batchConcurrency, singleConcurrency: SINGLE_CONCURRENCY },
    metrics,
    details: {
      batch: { ...batch, elapsedMs: batchMs, cpu: batchCpu },
      single: {
        acknowledged: single.acknowledged,
        failed: single.failed,
        error: single.error,
        elapsedMs: singleMs,
        latencyMs: latency,
        cpu: singleCpu,
      },
      minimal: minimal ? { ...minimal.tally, elapsedMs: minimal.ms, cpu: minimal.cpu } : null,
    },
  };
}

export const ingest: Scenario = { name: 'ingest', needsReceiver: false, run };
