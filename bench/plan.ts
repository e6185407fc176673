/** Which steps a command runs, in order. */
import type { ScenarioOptions, ScenarioResult } from './lib/report.ts';
import { BacklogRun } from './scenarios/backlog.ts';
import { burst } from './scenarios/burst.ts';
import { CITUS_WORKER_COUNTS, CitusRun, citusServerLabel } from './scenarios/citus.ts';
import { fire } from './scenarios/fire.ts';
import { ingest } from './scenarios/ingest.ts';
import { PACED_MAX_CONCURRENCY, PACED_RATES, paced, pacedPull, type PacedPullSystem } from './scenarios/paced.ts';
import { limits } from './scenarios/limits.ts';
import { precision } from './scenarios/precision.ts';
import { pull } from './scenarios/pull.ts';
import { queues } from './scenarios/queues.ts';
import { readsMeasure } from './scenarios/reads.ts';
import { schedules } from './scenarios/schedules.ts';
import { sdk } from './scenarios/sdk.ts';
import type { Scenario } from './scenarios/scenario.ts';
import { SYSTEM_KEYS, type SystemKey } from './systems/system.ts';

export type Step =
  | {
      kind: 'system';
      title: string;
      scenario: Scenario;
      system: SystemKey;
      opts: ScenarioOptions;
      /** The destination's (a peer worker's) deliveries in flight at most; each system's default when absent. */
      maxConcurrency?: number;
    }
  | { kind: 'custom'; title: string; run: (batchRates: Map<string, number>) => Promise<ScenarioResult[]> };

export interface PlanOptions {
  /** Belfry's store; both when absent. */
  store?: 'sqlite' | 'postgres';
  /** "belfry", "bullmq", "bullmq-postgres", "pg-boss", "graphile-worker"; all when absent. */
  systems?: string[];
  opts: ScenarioOptions;
}

const PRECISION_RATES = [1_000, 5_000];
const BROKER_PRECISION_RATE = 5_000;
const SIDE_BY_SIDE: Record<string, Scenario> = { ingest, fire, precision };

function chooseSystems(p: PlanOptions): SystemKey[] {
  const wanted = p.systems ?? ['belfry', 'bullmq', 'bullmq-postgres', 'pg-boss', 'graphile-worker'];
  for (const w of wanted) {
    if (w !== 'belfry' && !SYSTEM_KEYS.includes(w as SystemKey))
      throw new Error(`--systems: unknown "${w}" (belfry, bullmq, bullmq-postgres, pg-boss, graphile-worker)`);
  }
  return SYSTEM_KEYS.filter((key) => {
    if (key.startsWith('belfry-'))
      return wanted.includes('belfry') && (p.store === undefined || key === `belfry-${p.store}`);
    return wanted.includes(key);
  });
}

function belfryStores(p: PlanOptions): ('sqlite' | 'postgres')[] {
  return chooseSystems(p)
    .filter((k) => k.startsWith('belfry-'))
    .map((k) => k.slice('belfry-'.length) as 'sqlite' | 'postgres');
}

function sideBySide(name: string, p: PlanOptions, systems: SystemKey[]): Step[] {
  const scenario = SIDE_BY_SIDE[name];
  // To a broker, precision runs at 5,000/s (the issue's figure) unless --rate says otherwise.
  const brokerChannel = p.opts.channel !== undefined && p.opts.channel !== 'http';
  const rates =
    name === 'precision'
      ? p.opts.rate
        ? [p.opts.rate]
        : brokerChannel
          ? [BROKER_PRECISION_RATE]
          : PRECISION_RATES
      : [undefined];
  return rates.flatMap((rate) =>
    systems.map(
      (system): Step => ({
        kind: 'system',
        title: `${name}${rate ? ` @ ${rate}/s` : ''}${brokerChannel ? ` → ${p.opts.channel}` : ''} · ${system}`,
        scenario,
        system,
        opts: { ...p.opts, rate },
      }),
    ),
  );
}

function burstSteps(p: PlanOptions): Step[] {
  return belfryStores(p).map(
    (store): Step => ({
      kind: 'custom',
      title: `burst · belfry-${store}`,
      run: async (rates) => [await burst(store, p.opts, rates.get(`belfry-${store}`) ?? null)],
    }),
  );
}

/**
 * A load step that fills every store side by side, then one step per store that measures it
 * alone: `backlog` (firing on a full store) or `reads` (reads and scrapes on a full store).
 */
function backlogSteps(p: PlanOptions, name: 'backlog' | 'reads' = 'backlog'): Step[] {
  const stores = belfryStores(p);
  if (stores.length === 0) return [];
  const run =
    name === 'backlog' ? new BacklogRun(stores, p.opts) : new BacklogRun(stores, p.opts, readsMeasure(p.opts));
  return [
    {
      kind: 'custom',
      title: `${name} load · ${stores.map((s) => `belfry-${s}`).join(', ')}`,
      run: async () => {
        await run.load();
        return [];
      },
    },
    ...stores.map(
      (store): Step => ({
        kind: 'custom',
        title: `${name} · belfry-${store}`,
        run: async (rates) => [await run.measure(store, rates.get(`belfry-${store}`) ?? null)],
      }),
    ),
  ];
}

function pullSteps(p: PlanOptions): Step[] {
  return belfryStores(p).map(
    (store): Step => ({
      kind: 'custom',
      title: `pull · belfry-${store}`,
      run: async () => [await pull(store, p.opts)],
    }),
  );
}

/** Per rate: the webhook stream to every system, then the pull stream to Belfry's stores and BullMQ's Worker. */
function pacedSteps(p: PlanOptions, systems: SystemKey[]): Step[] {
  const rates = p.opts.rate ? [p.opts.rate] : PACED_RATES;
  const pullSystems: PacedPullSystem[] = systems.filter(
    (k): k is PacedPullSystem => k === 'belfry-sqlite' || k === 'belfry-postgres' || k === 'bullmq',
  );
  return rates.flatMap((rate) => [
    ...systems.map(
      (system): Step => ({
        kind: 'system',
        title: `paced @ ${rate}/s · ${system}`,
        scenario: paced,
        system,
        opts: { ...p.opts, rate },
        maxConcurrency: PACED_MAX_CONCURRENCY,
      }),
    ),
    ...pullSystems.map(
      (system): Step => ({
        kind: 'custom',
        title: `paced pull @ ${rate}/s · ${system}`,
        run: async () => [await pacedPull(system, { ...p.opts, rate })],
      }),
    ),
  ]);
}

function queuesSteps(p: PlanOptions): Step[] {
  return belfryStores(p).map(
    (store): Step => ({
      kind: 'custom',
      title: `queues · belfry-${store}`,
      run: async () => [await queues(store, p.opts)],
    }),
  );
}

function schedulesSteps(p: PlanOptions): Step[] {
  return belfryStores(p).map(
    (store): Step => ({
      kind: 'custom',
      title: `schedules · belfry-${store}`,
      run: async () => [await schedules(store, p.opts)],
    }),
  );
}

/**
 * Belfry on plain PostgreSQL, then on Citus with 1 and with 2 workers: a step each, the later ones
 * compared with the first. Belfry's PostgreSQL store only, against no peer.
 */
function citusSteps(p: PlanOptions): Step[] {
  if (p.store !== undefined || p.systems !== undefined)
    throw new Error('--store and --systems do not apply to "citus" (Belfry on PostgreSQL and on Citus)');
  const run = new CitusRun(p.opts);
  return CITUS_WORKER_COUNTS.map(
    (workers): Step => ({
      kind: 'custom',
      title: `citus · ${citusServerLabel(workers)}`,
      run: async () => [await run.measure(workers)],
    }),
  );
}

/** The SDK's creates (batching on and off) against BullMQ's add(), both durable: one step, Belfry on SQLite. */
function sdkStep(p: PlanOptions): Step {
  return { kind: 'custom', title: 'sdk · belfry-sqlite, bullmq', run: () => sdk(p.opts) };
}

function limitsStep(): Step {
  return { kind: 'custom', title: 'limits', run: () => limits() };
}

export function planSteps(name: string, p: PlanOptions): Step[] {
  const systems = chooseSystems(p);
  switch (name) {
    case 'ingest':
    case 'fire':
    case 'precision':
      return sideBySide(name, p, systems);
    case 'burst':
      return burstSteps(p);
    case 'backlog':
      return backlogSteps(p);
    case 'reads':
      return backlogSteps(p, 'reads');
    case 'limits':
      return [limitsStep()];
    case 'pull':
      return pullSteps(p);
    case 'schedules':
      return schedulesSteps(p);
    case 'paced':
      return pacedSteps(p, systems);
    case 'queues':
      return queuesSteps(p);
    case 'sdk':
      return [sdkStep(p)];
    case 'citus':
      return citusSteps(p);
    case 'all':
      if (p.opts.n !== undefined || p.opts.rate !== undefined)
        throw new Error(
          '--n and --rate do not apply to "all" (each scenario has its own size; precision runs at 1,000/s and 5,000/s)',
        );
      return [
        limitsStep(),
        ...sideBySide('ingest', p, systems),
        sdkStep(p),
        ...sideBySide('fire', p, systems),
        ...sideBySide('precision', p, systems),
        ...burstSteps(p),
        ...schedulesSteps(p),
        ...backlogSteps(p),
        ...pullSteps(p),
        ...queuesSteps(p),
        ...pacedSteps(p, systems),
      ];
    default:
      throw new Error(
        `unknown scenario "${name}" (ingest, sdk, fire, precision, burst, backlog, reads, limits, pull, schedules, paced, queues, citus, all)`,
      );
  }
}
