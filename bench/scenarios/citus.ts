/**
 * citus: Belfry's PostgreSQL store on Citus beside plain PostgreSQL. One step per server, in turn:
 * the machine's PostgreSQL, a Citus cluster of 1 worker and one of 2 workers (each a throw-away
 * cluster of this process, test/support/citus.ts, started for its step and stopped after it; the
 * store's schema is distributed with `&citus=true`). On each, `ingest` on a fresh store (its batch
 * phase is the figure: N events in batches of 1,000, 4 in flight), then `fire` on another fresh
 * store (N events due at one instant, to the loopback receiver), N = 20,000 unless `--n`.
 *
 * Reports each rate and its ratio to plain PostgreSQL's in the same run, and the CPU µs per event
 * of the node and of each PostgreSQL instance apart (lib/pg-cpu.ts: the Citus coordinator, each
 * worker; plain PostgreSQL's server) over the windows `ingest` and `fire` measure their CPU in.
 * The table is printed with the summary (lib/summary.ts, citusLines).
 */
import { availableParallelism } from 'node:os';
import { startCitusCluster } from '../../test/support/citus.ts';
import { cpuMicrosPerEvent, type CpuSpent } from '../lib/machine.ts';
import type { LogIssue, PgServer } from '../lib/node.ts';
import { citusInstances, localPgInstance } from '../lib/pg-cpu.ts';
import { PG_URL, settle } from '../lib/pg.ts';
import { metricValue, type Metric, type ScenarioOptions, type ScenarioResult } from '../lib/report.ts';
import { startBelfry } from '../systems/belfry.ts';
import type { SystemOptions } from '../systems/system.ts';
import { FIRE_WAIT_MS_MAX, fire } from './fire.ts';
import { ingest } from './ingest.ts';
import { runOnSystem } from './scenario.ts';

/**
 * On this 2-core machine Belfry on Citus fires about 1,200 events/s and takes 5,000-9,000 batch
 * events/s (plain PostgreSQL: about 7,000 and 30,000): 20,000 keeps the run near 2 minutes.
 */
const N_DEFAULT = 20_000;
/** fire's wait after the due instant allows 100 deliveries/s (fire's own bound when that is longer); it still ends after 20 s without one. */
const FIRE_WAIT_MS_PER_EVENT = 10;
/** The servers measured, by their Citus workers: 0 is the machine's plain PostgreSQL. */
export const CITUS_WORKER_COUNTS: readonly number[] = [0, 1, 2];

/** "PostgreSQL", "Citus, 1 worker", "Citus, 2 workers". */
export function citusServerLabel(workers: number): string {
  return workers === 0 ? 'PostgreSQL' : `Citus, ${workers} worker${workers === 1 ? '' : 's'}`;
}

/** CPU µs per event of the node, of each database instance by name, and of all of them. */
function cpuPerEvent(what: 'fire' | 'ingest', spent: CpuSpent): Metric[] {
  const instances = Object.entries(spent.instancesS ?? {});
  const total = spent.processS + instances.reduce((sum, [, s]) => sum + s, 0);
  return [['node', spent.processS] as const, ...instances, ['total', total] as const].map(([name, s]) => ({
    name: `${what} CPU µs per event: ${name}`,
    value: cpuMicrosPerEvent(s, spent.events),
    unit: 'µs',
  }));
}

/** The steps' shared state: plain PostgreSQL's result, which the Citus steps' ratios divide by. */
export class CitusRun {
  private plain: ScenarioResult | null = null;

  constructor(private readonly opts: ScenarioOptions) {}

  /** The step of the server with `workers` Citus workers (0: plain PostgreSQL). */
  async measure(workers: number): Promise<ScenarioResult> {
    const cluster = workers === 0 ? null : await startCitusCluster(workers);
    try {
      const server: PgServer = cluster
        ? { url: cluster.url, citus: true, instances: await citusInstances(cluster.url, cluster.dataDir) }
        : { url: PG_URL, citus: false, instances: [await localPgInstance()] };
      const result = await this.measureOn(server, workers);
      if (workers === 0) this.plain = result;
      return result;
    } finally {
      cluster?.stop();
    }
  }

  private async measureOn(server: PgServer, workers: number): Promise<ScenarioResult> {
    const n = this.opts.n ?? N_DEFAULT;
    const opts: ScenarioOptions = {
      ...this.opts,
      n,
      waitMsMax: Math.max(FIRE_WAIT_MS_MAX, n * FIRE_WAIT_MS_PER_EVENT),
    };
    const start = (o: SystemOptions) => startBelfry('postgres', o, server);
    const urls = server.instances.map((i) => i.url);
    await settle(urls);
    const ingested = await runOnSystem(ingest, start, opts, null);
    await settle(urls);
    const fired = await runOnSystem(fire, start, opts, metricValue(ingested, 'batch events/s'));

    const fireRate = metricValue(fired, 'deliveries/s');
    const ingestRate = metricValue(ingested, 'batch events/s');
    const plain = workers === 0 ? null : this.plain;
    const ratio = (value: number, name: string) => value / (plain ? metricValue(plain, name) : value);
    const label = `citus · Belfry · ${citusServerLabel(workers)}`;
    const logIssues = [ingested, fired].flatMap((r) => (r.details.logIssues ?? []) as LogIssue[]);
    return {
      label,
      scenario: 'citus',
      system: workers === 0 ? 'belfry-postgres' : `belfry-citus-${workers}`,
      options: {
        ...opts,
        workers,
        instances: server.instances.map((i) => i.name),
        cores: availableParallelism(),
      },
      metrics: [
        { name: 'fire events/s', value: fireRate, unit: '/s' },
        { name: 'fire ÷ PostgreSQL', value: ratio(fireRate, 'fire events/s'), unit: '×' },
        { name: 'ingest events/s', value: ingestRate, unit: '/s' },
        { name: 'ingest ÷ PostgreSQL', value: ratio(ingestRate, 'ingest events/s'), unit: '×' },
        ...cpuPerEvent('fire', fired.details.cpu as CpuSpent),
        ...cpuPerEvent('ingest', (ingested.details.batch as { cpu: CpuSpent }).cpu),
        { name: 'fire undelivered', value: metricValue(fired, 'undelivered'), unit: '' },
        { name: 'ingest failed', value: metricValue(ingested, 'failed'), unit: '' },
      ],
      details: {
        server: { citus: server.citus, instances: server.instances.map(({ name, dataDir }) => ({ name, dataDir })) },
        ingest: {
          label: ingested.label,
          options: ingested.options,
          metrics: ingested.metrics,
          details: ingested.details,
        },
        fire: { label: fired.label, options: fired.options, metrics: fired.metrics, details: fired.details },
        ...(logIssues.length > 0 ? { logIssues } : {}),
      },
    };
  }
}
