/**
 * backlog (Belfry only): N pending events (default 10,000,000) due a month from now fill the
 * store, loaded straight in SQL as the node would have written them (lib/backlog-fill.ts) while
 * the node is stopped. Then a node starts on that store and the fire scenario (100,000 due at
 * once) and the precision scenario (5,000/s for 30 s) run on it, each to a receiver of its own.
 * Reports what the backlog changes: fire rate, lateness, the node's start time and peak RSS, to
 * hold against the same run's fire and precision @ 5,000/s on an empty store.
 */
import { BACKLOG_DESTINATION, fillPostgres, fillSqlite, TEMPLATE_ID, type BacklogSpec } from '../lib/backlog-fill.ts';
import { createBelfryStore, startBenchNode, type BelfryStore, type StoreKind } from '../lib/node.ts';
import { startReceiverProcess } from '../lib/receiver-process.ts';
import type { Metric, ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import { BELFRY_MAX_CONCURRENCY, belfryOnNode, NOWHERE_URL } from '../systems/belfry.ts';
import { fire } from './fire.ts';
import { precision } from './precision.ts';
import type { Scenario } from './scenario.ts';

const N_DEFAULT = 10_000_000;
const FIRE_N = 100_000;
const PRECISION_RATE = 5_000;
const PRECISION_MS = 30_000;
/** The fire phase's wait after its due instant (150 s on an empty store): bounds the run when firing stalls. */
const FIRE_WAIT_MS_MAX = 60_000;
const MONTH_MS = 30 * 86_400_000;

async function loadBacklog(store: BelfryStore, n: number): Promise<{ loadMs: number }> {
  const node = await startBenchNode(store);
  const firstAt = Date.now() + MONTH_MS;
  try {
    await node.putDestination(BACKLOG_DESTINATION, NOWHERE_URL, 20);
    const client = node.client(1);
    const res = await client.call('POST', '/v1/events', { id: TEMPLATE_ID, fireAt: firstAt - 1, destination: BACKLOG_DESTINATION, payload: { fireAt: firstAt - 1 } });
    await client.close();
    if (res.status !== 201) throw new Error(`backlog template: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  } finally {
    await node.stop();
  }
  const spec: BacklogSpec = { n, firstAt, stepMs: 1 };
  const startedMs = performance.now();
  let reported = 0;
  const progress = (done: number) => {
    if (done - reported < 1_000_000 && done < n) return;
    reported = done;
    console.error(`[bench] backlog: ${done.toLocaleString('en-US')} / ${n.toLocaleString('en-US')} loaded, ${((performance.now() - startedMs) / 1000).toFixed(0)} s`);
  };
  if (store.kind === 'sqlite') fillSqlite(store.sqliteFile, spec, progress);
  else await fillPostgres(store.schema!, spec, progress);
  return { loadMs: performance.now() - startedMs };
}

/** Runs one scenario on the node, to a fresh receiver behind a destination of its own. */
async function runOn(node: Awaited<ReturnType<typeof startBenchNode>>, scenario: Scenario, destination: string, opts: ScenarioOptions, batchRate: number | null): Promise<ScenarioResult> {
  const rx = await startReceiverProcess();
  try {
    await node.putDestination(destination, rx.url, BELFRY_MAX_CONCURRENCY);
    const system = belfryOnNode(node, destination, 4, async () => {});
    try {
      return await scenario.run({ system, rx, opts, batchRate });
    } finally {
      await system.stop();
    }
  } finally {
    await rx.close();
  }
}

function pick(result: ScenarioResult, prefix: string, names: string[]): Metric[] {
  return result.metrics.filter((m) => names.includes(m.name)).map((m) => ({ ...m, name: `${prefix} ${m.name}` }));
}

export async function backlog(kind: StoreKind, opts: ScenarioOptions, batchRate: number | null): Promise<ScenarioResult> {
  const n = opts.n ?? N_DEFAULT;
  const store = await createBelfryStore(kind);
  try {
    const { loadMs } = await loadBacklog(store, n);
    const startedMs = performance.now();
    const node = await startBenchNode(store);
    const startMs = performance.now() - startedMs;
    const rssAfterStart = node.peakRssBytes();
    let fired: ScenarioResult;
    let precise: ScenarioResult;
    let peakRss: number;
    let logIssues: unknown[];
    try {
      fired = await runOn(node, fire, 'rx-fire', { n: FIRE_N, waitMsMax: FIRE_WAIT_MS_MAX }, batchRate);
      precise = await runOn(node, precision, 'rx-precision', { rate: PRECISION_RATE, durationMs: PRECISION_MS }, batchRate);
      peakRss = node.peakRssBytes();
      logIssues = node.logIssues();
    } finally {
      await node.stop();
    }
    return {
      label: `backlog of ${n.toLocaleString('en-US')} · ${fired.label.split(' · ').slice(1).join(' · ')}`,
      scenario: 'backlog',
      system: fired.system,
      options: { backlog: n, fireN: FIRE_N, rate: PRECISION_RATE, durationMs: PRECISION_MS },
      metrics: [
        { name: 'pending events', value: n + 1, unit: '' },
        ...pick(fired, 'fire', ['deliveries/s', 'due → last delivery', 'undelivered', 'early', 'duplicates']),
        ...pick(precise, 'precision', ['lateness p50', 'lateness p90', 'lateness p99', 'lateness max', 'undelivered', 'early', 'duplicates']),
        { name: 'node start', value: startMs, unit: 'ms' },
        { name: 'node RSS after start', value: rssAfterStart / 2 ** 20, unit: 'MiB' },
        { name: 'node peak RSS', value: peakRss / 2 ** 20, unit: 'MiB' },
        { name: 'backlog load (SQL, not Belfry)', value: loadMs / 1000, unit: 's' },
      ],
      details: { fire: { ...fired, chart: undefined }, precision: { ...precise, chart: undefined }, logIssues },
      chart: precise.chart,
    };
  } finally {
    await store.dispose();
  }
}
