/**
 * One seeded run of the whole cluster (docs/simulation.md):
 *
 *   setup ─▶ fault phase (clients create, edit and cancel; consumers pull; faults strike)
 *         ─▶ drain (every fault healed, dead nodes restarted, every destination answers)
 *         ─▶ end checks
 *
 * The seed decides everything: the number of nodes and their clock skews, the workload, which
 * faults strike where and when, every latency and every remote answer, and the order of work
 * due at the same millisecond. The same seed (and source tree) gives the same run: the trace's
 * digest says so.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventRecord } from '../../src/core/event.ts';
import type { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { loadBelfry } from './belfry.ts';
import { checkEnd, type Db } from './checks.ts';
import { Clients } from './clients.ts';
import { Database } from './database.ts';
import { SimCluster, type RunContext } from './cluster.ts';
import {
  DEFAULT_FAULTS,
  DISRUPTIVE,
  FAIRNESS_WORKLOADS,
  FAULT_KINDS,
  FaultDirector,
  WORKLOADS,
  type FaultKind,
} from './faults.ts';
import { checkBulk, setupBulkEvents, startBulkJobs } from './bulk.ts';
import { fmt, History, setTraceEpoch, type Violation } from './history.ts';
import { Remote } from './remote.ts';
import { setupSchedules, setupTenants, STORE_EPOCH_MS } from './setup.ts';
import { NODE_SETTINGS, type SimNode } from './sim-node.ts';
import { WakeupHub, type StoreObserver } from './store-link.ts';
import { Prng, World } from './world.ts';

export { DEFAULT_FAULTS, FAULT_KINDS, type FaultKind } from './faults.ts';

export interface SimOptions {
  seed: number;
  /** Source tree to simulate (default: this repository's src). */
  src?: string;
  /** Faults allowed; the seed picks among them. Default: DEFAULT_FAULTS. */
  faults?: readonly FaultKind[];
  /** Nodes (default: 3 to 5, by the seed). */
  nodes?: number;
  /** Length of the fault phase (simulated ms). */
  durationMs?: number;
  /** Longest drain after it (simulated ms). */
  drainMs?: number;
  /** Keep every trace line (default: the last TRACE_TAIL lines). */
  fullTrace?: boolean;
  /** The database takes time per call and runs one call at a time (database.ts); false: calls run as they arrive, in no time. Default true. */
  costs?: boolean;
  /** Called every 500 ms of simulated time with the nodes (debugging a seed). */
  probe?(atMs: number, nodes: readonly SimNode[]): void;
}

export interface SimResult {
  seed: number;
  ok: boolean;
  violations: Violation[];
  violationCount: number;
  nodes: number;
  faults: FaultKind[];
  /** Faults that struck, by kind. */
  struck: Record<string, number>;
  stats: History['stats'] & {
    events: number;
    schedules: number;
    occurrences: number;
    timers: number;
    storeCalls: number;
    dbBusyMs: number;
    dbQueuedMsMax: number;
  };
  simulatedMs: number;
  wallMs: number;
  /** FNV-1a over every trace line: equal for two runs of the same seed and tree. */
  traceDigest: string;
  /** The last trace lines (all of them with fullTrace). */
  trace: string[];
  uncaught: string[];
}

export const TRACE_TAIL = 400;
const TRACE_FULL_MAX = 500_000;

function fnv(hash: number, text: string): number {
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** A tmpfs when there is one: the store's fsyncs cost nothing there. */
function dataDirBase(): string {
  return existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
}

/** The run's trace: every line hashed into the digest, the last ones (or all) kept. */
class Trace {
  readonly lines: string[] = [];
  digest = 0x811c9dc5;
  world: World | null = null;
  constructor(private readonly full: boolean) {}

  line(text: string): void {
    const line = `${((this.world?.mono ?? 0) / 1000).toFixed(3).padStart(8)} ${text}`;
    this.digest = fnv(this.digest, line);
    this.lines.push(line);
    const keep = this.full ? TRACE_FULL_MAX : TRACE_TAIL;
    if (this.lines.length > keep * 2) this.lines.splice(0, this.lines.length - keep);
  }
}

/** What the database ran, into the history (and the trace). */
function observerOf(history: History, trace: (line: string) => void): StoreObserver {
  let lastEpoch = -1;
  const claims = (events: EventRecord[]) => events.map((e) => `${e.tenantId}/${e.id}#${e.attempts}`).join(' ');
  return {
    executed(link, method, args, result, lost, byClient) {
      const p = args[0] as Record<string, unknown>;
      if (method === 'eventClaim') {
        const claimed = result as EventRecord[];
        if (claimed.length === 0) return;
        trace(`${link.label} claimed ${claims(claimed)}${lost ? ' (answer lost)' : ''}`);
        history.claimed(link.label, p.now as number, claimed, lost);
      } else if (method === 'eventPullClaim') {
        const claimed = result as EventRecord[];
        if (claimed.length === 0) return;
        trace(`${link.label} pull claim ${p.receipt as string}: ${claims(claimed)}${lost ? ' (answer lost)' : ''}`);
        history.pullClaimed(link.label, p.receipt as string, p.leaseUntil as number, claimed);
      } else if (method === 'eventPullSettle') {
        const after = result as EventRecord | null;
        if (after) {
          trace(
            `${link.label} pull ${p.action as string} ${after.tenantId}/${after.id} (${p.receipt as string}) → ${after.state}`,
          );
          history.pullSettled(link.label, p.action as string, p.receipt as string, after);
        } else if (p.action !== 'expire')
          trace(
            `${link.label} pull ${p.action as string} ${p.tenantId as string}/${p.id as string} (${p.receipt as string}) refused`,
          );
      } else if (method === 'eventRecordAttempts') {
        history.recorded(p.outcomes as { tenantId: string; id: string; version: number }[], result as boolean[]);
      } else if (method === 'eventRescue' || method === 'eventRescueDead') {
        const refs = (result ?? []) as { tenantId: string; id: string; version: number }[];
        if (refs.length > 0) history.rescued(link.label, method, refs);
      } else if (method === 'eventCancel' && !byClient) {
        // A node's own cancel: an occurrence missed at its fire (the occurrence gate).
        const r = result as { kind: string; event?: EventRecord };
        if (r.kind !== 'ok' || !r.event) return;
        const h = history.event(r.event.tenantId, r.event.id);
        if (!h.cancelSent) h.canceledByNode = true;
        trace(`${link.label} canceled ${r.event.tenantId}/${r.event.id}: ${String(p.reason ?? '')}`);
      } else if (method === 'scheduleAdvance' || method === 'scheduleAdvanceMany') {
        const advances = method === 'scheduleAdvance' ? [p] : (p.advances as Record<string, unknown>[]);
        const results = (method === 'scheduleAdvance' ? [result] : result) as {
          applied: boolean;
          results?: { kind: string }[];
        }[];
        advances.forEach((a, i) => {
          const made = results[i]?.results?.filter((x) => x.kind === 'created').length ?? 0;
          if (results[i]?.applied && (made > 0 || (a.missedAdd as number) > 0)) {
            trace(
              `${link.label} advanced ${a.tenantId as string}/${a.id as string}: ${made} made, ${a.missedAdd as number} missed, cursor ${a.nextAt === null ? 'done' : fmt(a.nextAt as number)}`,
            );
          }
        });
      } else if (method === 'leaderAttemptElect') {
        const lease = result as { nodeId: string; epoch: number } | null;
        if (lease && lease.epoch !== lastEpoch) {
          lastEpoch = lease.epoch;
          trace(`${link.label} leads (epoch ${lease.epoch})`);
        }
      } else if (method === 'shardAssign' && result === true) {
        trace(`${link.label} assigned shards (epoch ${p.epoch as number})`);
      }
    },
    failed(link, method, err) {
      trace(`${link.label} ${method} failed: ${(err as Error).message}`);
      // A lost lease renewal or heartbeat: this node's claims may be taken from it.
      if (method === 'claimLeaseRenew' || method === 'nodeHeartbeat')
        history.faulted(link.label, `its ${method} failed`);
    },
  };
}

/** Every 500 ms: the probe, and each node's memory within its bounds. */
function sampleBounds(world: World, history: History, cluster: SimCluster, probe: SimOptions['probe']): void {
  const s = NODE_SETTINGS;
  // Claims in flight may add to what the dispatcher holds: at most 5 claims of claimBatchMax.
  const claimsInFlightMax = 5 * s.claimBatchMax;
  const sample = () => {
    probe?.(world.mono, cluster.nodes);
    for (const n of cluster.nodes) {
      if (!n.alive) continue;
      if (n.scheduler.pending > s.wheelSizeMax)
        history.violate('bounds', `${n.label}: ${n.scheduler.pending} refs in memory, bound ${s.wheelSizeMax}`);
      if (n.dispatcher.backlog > s.dispatchBacklogMax + claimsInFlightMax)
        history.violate(
          'bounds',
          `${n.label}: ${n.dispatcher.backlog} claimed events held, bound ${s.dispatchBacklogMax} + ${claimsInFlightMax} in claims`,
        );
    }
    world.timer(null, 500, sample);
  };
  world.timer(null, 500, sample);
}

export async function simulate(opts: SimOptions): Promise<SimResult> {
  const belfry = await loadBelfry(opts.src);
  const startedWall = performance.now();
  const rand = new Prng(opts.seed);
  const allowed = new Set<FaultKind>(opts.faults ?? DEFAULT_FAULTS);
  // The seed chooses this run's faults among those allowed: most runs get several at once.
  const faults = FAULT_KINDS.filter(
    (f) =>
      allowed.has(f) && (opts.faults?.length === 1 || rand.chance(f === 'bulk' ? 0.05 : WORKLOADS.has(f) ? 0.25 : 0.6)),
  );
  // A fairness run keeps the disruptive faults out, so that an on-time schedule has no excuse to be late.
  const active = new Set<FaultKind>(
    faults.some((f) => FAIRNESS_WORKLOADS.has(f)) ? faults.filter((f) => !DISRUPTIVE.has(f)) : faults,
  );
  const nodeCount = opts.nodes ?? rand.int(3, 5);
  const durationMs = opts.durationMs ?? 30_000;
  const drainMs = opts.drainMs ?? 90_000;

  const tr = new Trace(opts.fullTrace ?? false);
  const trace = (line: string) => tr.line(line);
  const world = new World(rand.fork(), STORE_EPOCH_MS, trace);
  tr.world = world;
  setTraceEpoch(STORE_EPOCH_MS);
  const dir = mkdtempSync(join(dataDirBase(), 'belfry-sim-'));
  world.install();
  let real: SqliteStore | null = null;
  let cluster: SimCluster | null = null;
  try {
    real = await belfry.sqlite.openSqliteStore({ dataDir: dir });
    const db = (real as unknown as { db: Db }).db;
    const executingInGroup = db.prepare(
      `SELECT count(*) AS n FROM events WHERE tenant_id = ? AND grp = ? AND state = 'executing'`,
    );
    const history = new History(world, (tenantId, group) => (executingInGroup.get(tenantId, group) as { n: number }).n);
    trace(
      `seed ${opts.seed}: ${nodeCount} nodes, faults ${[...active].join(',') || 'none'}, tree ${belfry.root}${belfry.gate ? '' : ' (no occurrence gate)'}`,
    );
    const struck: Record<string, number> = {};
    const remote = new Remote(world, rand.fork(), history);
    const ctx: RunContext = {
      belfry,
      world,
      history,
      remote,
      trace,
      strike: (kind, line) => {
        struck[kind] = (struck[kind] ?? 0) + 1;
        trace(`FAULT ${kind}: ${line}`);
      },
    };

    await setupTenants(real, remote);
    if (active.has('bulk') && belfry.bulk) await setupBulkEvents(real, belfry, history);
    const schedules = await setupSchedules(real, belfry, rand, STORE_EPOCH_MS + durationMs, active.has('catchup'));
    const deps = {
      real,
      observer: observerOf(history, trace),
      metrics: new belfry.metrics.Metrics(),
      hub: new WakeupHub(),
      db: new Database(world, opts.costs ?? true),
    };
    const pointRand = rand.fork();
    cluster = new SimCluster(ctx, rand, deps, nodeCount);
    cluster.startAll(nodeCount);
    const clients = new Clients(ctx, cluster, rand.fork());
    clients.startApiClient();
    clients.startConsumers(rand.fork());
    const stormKey = active.has('edits')
      ? await clients.startEditStorm(real, STORE_EPOCH_MS + durationMs + 5_000)
      : null;
    const bulkJobs = active.has('bulk') && belfry.bulk ? startBulkJobs(ctx, cluster, rand.fork()) : null;
    new FaultDirector(ctx, cluster, active, rand.fork(), pointRand).start();
    sampleBounds(world, history, cluster, opts.probe);

    await world.runUntil(durationMs);

    // The drain: every fault healed, dead nodes back, every destination answers, until every
    // event is finished and every schedule has passed its end.
    trace('DRAIN: faults healed, dead nodes restarted, destinations healthy');
    remote.healthy = true;
    for (const d of remote.destinations.values()) d.hangUntilMs = 0;
    cluster.heal();
    const unfinished = db.prepare(
      `SELECT count(*) AS n FROM events WHERE state IN ('scheduled', 'executing', 'awaiting_retry')`,
    );
    const schedulesLeft = db.prepare(`SELECT count(*) AS n FROM schedules WHERE next_at IS NOT NULL AND paused = 0`);
    let done = false;
    const check = () => {
      cluster!.restartDead();
      done = (unfinished.get() as { n: number }).n === 0 && (schedulesLeft.get() as { n: number }).n === 0;
      if (!done) world.timer(null, 1_000, check);
    };
    world.timer(null, 1_000, check);
    await world.runWhile(world.mono + drainMs, () => done);

    const end = await checkEnd({
      db,
      real,
      history,
      schedules,
      stormKey,
      afterHealMs: world.mono - durationMs,
      uncaught: world.uncaught,
    });
    if (bulkJobs) await checkBulk(real, history, bulkJobs.small, trace);
    const storeCalls = cluster.nodes.reduce((n, node) => n + node.link.calls, 0);
    trace(
      `END ${history.violationCount} violations; ${end.events} events, ${end.notFinished} not finished; drained at ${(world.mono / 1000).toFixed(1)} s`,
    );
    return {
      seed: opts.seed,
      ok: history.violationCount === 0,
      violations: history.violations,
      violationCount: history.violationCount,
      nodes: nodeCount,
      faults: [...active],
      struck,
      stats: {
        ...history.stats,
        events: end.events,
        schedules: schedules.length,
        occurrences: end.occurrences,
        timers: world.timersRun,
        storeCalls,
        dbBusyMs: Math.round(deps.db.busyMs),
        dbQueuedMsMax: Math.round(deps.db.queuedMsMax),
      },
      simulatedMs: world.mono,
      wallMs: Math.round(performance.now() - startedWall),
      traceDigest: tr.digest.toString(16).padStart(8, '0'),
      trace: opts.fullTrace ? tr.lines : tr.lines.slice(-TRACE_TAIL),
      uncaught: world.uncaught,
    };
  } finally {
    for (const n of cluster?.nodes ?? []) n.kill();
    world.uninstall();
    await real?.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}
