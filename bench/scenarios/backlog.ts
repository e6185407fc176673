/**
 * backlog (Belfry only): N pending events (default 10,000,000) due a month from now fill the
 * store, loaded straight in SQL as the node would have written them (lib/backlog-fill.ts) while
 * the node is stopped; with both stores, both load at the same time. Then a node starts on that
 * store and the fire scenario (100,000 due at once) and the precision scenario (5,000/s for 20 s)
 * run on it, each to a receiver of its own.
 * Reports what the backlog changes: fire rate, lateness, the node's start time and peak RSS, to
 * hold against the same run's fire and precision @ 5,000/s on an empty store.
 */
import {
  BACKLOG_DESTINATION,
  fillPostgres,
  fillSqliteInChild,
  TEMPLATE_ID,
  type BacklogSpec,
} from '../lib/backlog-fill.ts';
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
const PRECISION_MS = 20_000;
/** The fire phase's wait after its due instant (150 s on an empty store): bounds the run when firing stalls. */
const FIRE_WAIT_MS_MAX = 60_000;
const MONTH_MS = 30 * 86_400_000;

/** Stores the template event through a node's API: the one row every backlog row is copied from. */
export async function storeTemplate(store: BelfryStore, firstAt: number): Promise<void> {
  const node = await startBenchNode(store);
  try {
    await node.putDestination(BACKLOG_DESTINATION, NOWHERE_URL, 20);
    const client = node.client(1);
    const res = await client.call('POST', '/v1/events', {
      id: TEMPLATE_ID,
      fireAt: firstAt - 1,
      destination: BACKLOG_DESTINATION,
      payload: { fireAt: firstAt - 1 },
    });
    await client.close();
    if (res.status !== 201) throw new Error(`backlog template: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  } finally {
    await node.stop();
  }
}

/** Fills one stopped store with n rows (SQLite in a child process); resolves with the load's duration. */
export async function fill(store: BelfryStore, spec: BacklogSpec): Promise<number> {
  const startedMs = performance.now();
  let reported = 0;
  const progress = (done: number) => {
    if (done - reported < 2_000_000 && done < spec.n) return;
    reported = done;
    console.error(
      `[bench] backlog · ${store.kind}: ${done.toLocaleString('en-US')} / ${spec.n.toLocaleString('en-US')} loaded, ${((performance.now() - startedMs) / 1000).toFixed(0)} s`,
    );
  };
  if (store.kind === 'sqlite') await fillSqliteInChild(store.sqliteFile, spec, progress);
  else await fillPostgres(store.schema!, spec, progress);
  return performance.now() - startedMs;
}

/** Runs one scenario on the node, to a fresh receiver behind a destination of its own. */
export async function runOn(
  node: Awaited<ReturnType<typeof startBenchNode>>,
  scenario: Scenario,
  destination: string,
  opts: ScenarioOptions,
  batchRate: number | null,
): Promise<ScenarioResult> {
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

/** What a run does with one filled store (the node is not running): measure it and return the result. */
export type MeasureFilled = (
  store: BelfryStore,
  n: number,
  loadMs: number,
  loadedSideBySide: boolean,
  batchRate: number | null,
) => Promise<ScenarioResult>;

/**
 * The backlog scenario on each store in `kinds`, as separate steps: `load()` fills every store at
 * once (the loads are SQL, not Belfry, and on two cores loading both side by side saves minutes),
 * then `measure(kind)` measures one store alone on a quiet machine and drops it. A store that
 * failed to load fails its own measure step; one store's failure leaves the others' figures.
 * `measureFilled` is the backlog scenario's by default; the reads scenario passes its own.
 */
export class BacklogRun {
  private readonly loaded = new Map<StoreKind, { store: BelfryStore; loadMs: number }>();
  private readonly n: number;

  constructor(
    private readonly kinds: StoreKind[],
    opts: ScenarioOptions,
    private readonly measureFilled: MeasureFilled = measure,
  ) {
    this.n = opts.n ?? N_DEFAULT;
  }

  async load(): Promise<void> {
    const spec: BacklogSpec = { n: this.n, firstAt: Date.now() + MONTH_MS, stepMs: 1 };
    const stores: BelfryStore[] = [];
    try {
      for (const kind of this.kinds) stores.push(await createBelfryStore(kind));
      for (const store of stores) await storeTemplate(store, spec.firstAt);
      // allSettled: a failed load must not drop the other store while it is still loading.
      const loads = await Promise.allSettled(stores.map((store) => fill(store, spec)));
      const failed = loads.find((l) => l.status === 'rejected');
      if (failed) throw failed.reason;
      loads.forEach((l, i) =>
        this.loaded.set(stores[i].kind, { store: stores[i], loadMs: (l as PromiseFulfilledResult<number>).value }),
      );
    } catch (err) {
      await Promise.all(stores.map((store) => store.dispose()));
      throw err;
    }
  }

  async measure(kind: StoreKind, batchRate: number | null): Promise<ScenarioResult> {
    const loaded = this.loaded.get(kind);
    if (!loaded) throw new Error(`backlog: the ${kind} store was not loaded (see the load step)`);
    this.loaded.delete(kind);
    try {
      return await this.measureFilled(loaded.store, this.n, loaded.loadMs, this.kinds.length > 1, batchRate);
    } finally {
      await loaded.store.dispose();
    }
  }
}

/** Starts a node on a filled store and runs fire, then precision, on it. */
async function measure(
  store: BelfryStore,
  n: number,
  loadMs: number,
  loadedSideBySide: boolean,
  batchRate: number | null,
): Promise<ScenarioResult> {
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
    precise = await runOn(
      node,
      precision,
      'rx-precision',
      { rate: PRECISION_RATE, durationMs: PRECISION_MS },
      batchRate,
    );
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
      ...pick(precise, 'precision', [
        'lateness p50',
        'lateness p90',
        'lateness p99',
        'lateness max',
        'undelivered',
        'early',
        'duplicates',
      ]),
      { name: 'node start', value: startMs, unit: 'ms' },
      { name: 'node RSS after start', value: rssAfterStart / 2 ** 20, unit: 'MiB' },
      { name: 'node peak RSS', value: peakRss / 2 ** 20, unit: 'MiB' },
      { name: 'backlog load (SQL, not Belfry)', value: loadMs / 1000, unit: 's' },
    ],
    details: {
      fire: { ...fired, chart: undefined },
      precision: { ...precise, chart: undefined },
      logIssues,
      loadedSideBySide,
    },
    chart: precise.chart,
  };
}
