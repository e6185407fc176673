/**
 * One Belfry node: opens the store, starts the scheduler, dispatcher, rescuer and (as leader) the
 * retention cleaner, serves the API.
 *
 * Start: data dir made private ─▶ store opened (SQLite: the file checked, the lock taken) ─▶ the
 * API listens ─▶ only then the loops that fire and deliver start. A node that cannot listen (the
 * port is taken) fires nothing: it closes what it opened (releasing the data-dir lock) and its
 * start fails, so the process exits non-zero. A failure at any step of the start does the same.
 *
 * Shutdown (SIGTERM or stop()):
 *   not ready ─▶ stop accepting requests (in-flight requests finish) ─▶ stop firing
 *   ─▶ deliveries in flight finish until the deadline (then are aborted and recorded as retries)
 *   ─▶ events claimed but not sent are released, due now ─▶ store closed
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { createApp } from '../api/app.ts';
import type { ApiLimits, AppDeps } from '../api/deps.ts';
import type { Channel } from '../channels/channel.ts';
import { Cluster, type ClusterOptions } from '../cluster/cluster.ts';
import { AddressPolicy } from '../core/address.ts';
import { SteadyClock, SystemClock, type Clock } from '../core/clock.ts';
import { EventBus } from '../core/event-sink.ts';
import { Lifecycle, loopService, type Service } from '../core/service.ts';
import type { Dispatcher } from '../dispatch/dispatcher.ts';
import type { PullWaiters, PullWaitersOptions } from '../pull/index.ts';
import type { Cleaner, CleanerOptions } from '../maintenance/cleaner.ts';
import type { CountSampler, CountSamplerOptions } from '../maintenance/count-sampler.ts';
import type { ForecastSampler } from '../maintenance/forecast-sampler.ts';
import type { BulkRunner, BulkRunnerOptions } from '../bulk/index.ts';
import { madeAheadMs, type Materialiser, type MaterialiserOptions, type OccurrenceGate } from '../schedules/index.ts';
import type { Scheduler, SchedulerOptions } from '../scheduler/scheduler.ts';
import type { SourceManager, SourceManagerOptions } from '../sources/index.ts';
import type { DueWakeups, Store } from '../store/store.ts';
import { clusterView } from './cluster-view.ts';
import type { NodeConfig } from './config.ts';
import { createLogger } from './logger.ts';
import { Metrics } from './metrics.ts';
import { openStore, prepareDataDir, prepareStore, resolveAdminKey, storageWatchOf } from './node-store.ts';
import { buildParts, type NodeBase, type Parts } from './parts.ts';
import { Readiness } from './readiness.ts';
import type { StorageWatch } from './storage-watch.ts';
import { belfryVersion, storeKindOf } from './version.ts';

export interface NodeOptions {
  clock?: Clock;
  logger?: Logger;
  channel?: Channel;
  scheduler?: Partial<SchedulerOptions>;
  cluster?: Partial<ClusterOptions>;
  limits?: Partial<ApiLimits>;
  cleaner?: Partial<CleanerOptions>;
  counts?: Partial<CountSamplerOptions>;
  materialiser?: Partial<MaterialiserOptions>;
  sources?: Partial<SourceManagerOptions>;
  bulk?: Partial<BulkRunnerOptions>;
  pull?: Partial<PullWaitersOptions> & { expireIntervalMs?: number };
}

export interface BelfryNode {
  readonly url: string;
  readonly port: number;
  readonly app: FastifyInstance;
  readonly store: Store;
  readonly scheduler: Scheduler;
  readonly dispatcher: Dispatcher;
  readonly metrics: Metrics;
  readonly cleaner: Cleaner;
  /** Makes the occurrences of recurring schedules into events. */
  readonly materialiser: Materialiser;
  /** Counts of events sampled in the background (metrics, the pending quota). */
  readonly counts: CountSampler;
  /** The due-load forecast of the next hour, sampled in the background for /metrics. */
  readonly forecast: ForecastSampler;
  /** Runs bulk jobs (POST /v1/events/bulk). */
  readonly bulk: BulkRunner;
  /** Reads the tenants' Kafka sources (PUT /v1/sources/{name}). */
  readonly sources: SourceManager;
  readonly adminKey: string;
  /** Null on a single-node store. */
  readonly cluster: Cluster | null;
  /** Graceful stop; resolves when everything is closed. Safe to call twice. */
  stop(): Promise<void>;
}

export async function startNode(config: NodeConfig, opts: NodeOptions = {}): Promise<BelfryNode> {
  const owner = config.nodeId ?? `node-${randomBytes(6).toString('hex')}`;
  const logger = opts.logger ?? createLogger(config.logLevel, owner);
  const life = new Lifecycle((service, err) => logger.warn({ err, service }, 'stopping a service failed'));
  try {
    return await startParts(config, opts, owner, logger, life);
  } catch (err) {
    // Nothing half started is left running: no timer, no thread, no lock on the data dir.
    await life.stop(-Infinity);
    logger.error({ err: (err as Error).message }, 'start failed; closed everything it had opened');
    throw err;
  }
}

/** What a node opened and holds, besides its services. */
interface Opened {
  base: NodeBase;
  adminKey: string;
  storage: StorageWatch | null;
  startedAt: number;
}

/** Opens the store, builds the parts (parts.ts), serves the API, then starts firing: each a service of `life`. */
async function startParts(
  config: NodeConfig,
  opts: NodeOptions,
  owner: string,
  logger: Logger,
  life: Lifecycle,
): Promise<BelfryNode> {
  const opened = await open(config, opts, owner, logger, life, () => parts.firing.scheduler);
  const { base, adminKey } = opened;
  const parts = await buildParts(base, life);
  const readiness = new Readiness({ ...base, storage: opened.storage });
  const app = await createApp(apiDeps(opened, parts, () => readiness.check()));
  await life.start(apiService(app, parts.pull.pullWaiters, base.clock), 'requests');
  // Listen before anything fires: a node that cannot serve its API must not fire, deliver or
  // join a cluster (its start fails, undoing what it opened). Requests served before the loops
  // start are safe: the scheduler ignores notifications until it runs, then reads what is due.
  await app.listen({ port: config.port, host: config.host }).catch((err: Error) => {
    throw new Error(`cannot listen on ${config.host}:${config.port}: ${err.message}`, { cause: err });
  });
  const rescued = await startFiring(base, parts, life);
  readiness.started = true;
  const [url, port] = [urlOf(app, config), portOf(app, config)];
  const store = config.store === 'sqlite' ? `sqlite:${config.dataDir}` : 'postgres';
  logger.info({ port, host: config.host, url, owner, store, rescued, version: belfryVersion() }, 'listening');
  let stopped: Promise<void> | null = null;
  const stop = async () => {
    readiness.stopping = true;
    logger.info({ shutdownTimeoutMs: config.shutdownTimeoutMs }, 'shutting down');
    await life.stop(base.clock.monotonicMs() + config.shutdownTimeoutMs);
    logger.info('stopped');
  };
  const { firing, upkeep, intake } = parts;
  return {
    ...{ url, port, app, store: base.store, metrics: base.metrics, cluster: base.cluster, adminKey },
    ...{ scheduler: firing.scheduler, dispatcher: firing.dispatcher, materialiser: firing.materialiser },
    ...{ cleaner: upkeep.cleaner, counts: parts.counts, forecast: upkeep.forecast },
    ...{ bulk: intake.bulk, sources: intake.sources },
    stop: () => (stopped ??= stop()),
  };
}

/**
 * The data dir, the admin key and the store (migrated, its shard count checked), then the
 * cluster on a shared store and the clocks. `scheduler`: the scheduler once built (the cluster
 * tells it when this node's shards change).
 */
async function open(
  config: NodeConfig,
  opts: NodeOptions,
  owner: string,
  logger: Logger,
  life: Lifecycle,
  scheduler: () => Scheduler,
): Promise<Opened> {
  const startedAt = Date.now();
  prepareDataDir(config, logger);
  const adminKey = resolveAdminKey(config, logger);
  const storage = storageWatchOf(config, logger);
  const store = await openStore(config, logger, storage);
  await life.start({ name: 'store', stop: () => store.close() }, 'storage');
  await prepareStore(store, config);
  const cluster = store.capabilities.multiNode ? clusterOf(config, opts, store, owner, logger, scheduler) : null;
  // On a shared store, due times, stored timestamps and leases follow the store's clock. On one
  // node, leases (pull visibility timeouts) run on monotonic time: a step of the wall clock
  // neither ends a consumer's claim early nor stretches it.
  const clock: Clock = cluster ? cluster.clock : (opts.clock ?? new SystemClock());
  const leaseClock: Clock = cluster ? cluster.clock : new SteadyClock(clock);
  const metrics = new Metrics({ defaultMetrics: true });
  metrics.setBuildInfo({ version: belfryVersion(), node: process.version, store: storeKindOf(config.store) });
  const addressPolicy = new AddressPolicy(config.allowHosts);
  const events = new EventBus();
  const base = { config, opts, owner, logger, store, metrics, cluster, clock, leaseClock, addressPolicy, events };
  return { base, adminKey, storage, startedAt };
}

/** What the API is handed: the node's parts it calls, its bus, its views of the cluster and the dispatcher. */
function apiDeps(opened: Opened, parts: Parts, ready: () => Promise<{ ok: boolean; reasons: string[] }>): AppDeps {
  const { base, adminKey, startedAt } = opened;
  const { store, clock, leaseClock, metrics, logger, events, cluster, config, owner, addressPolicy } = base;
  const { firing, limits, quotas, counts } = parts;
  return {
    ...{ store, clock, leaseClock, metrics, logger, adminKey, limits, quotas, counts, events, addressPolicy },
    version: belfryVersion(),
    accessLog: config.accessLog,
    shardCount: config.shardCount,
    writer: parts.intake.writer,
    pullWaiters: parts.pull.pullWaiters,
    scheduleAheadMs: madeAheadMs(firing.materialiser.opts),
    retention: parts.upkeep.cleaner.opts.defaults,
    ...dispatcherViews(firing.dispatcher, owner, logger),
    clusterStatus: () =>
      clusterView({ store, clock, cluster, nodeId: owner, shardCount: config.shardCount, startedAt }),
    ready,
  };
}

/**
 * Joins the cluster, rescues what a previous run left executing, then starts firing, the
 * background loops and the intake, in that order (each a service of `life`). Returns how many
 * events it rescued.
 */
async function startFiring(base: NodeBase, parts: Parts, life: Lifecycle): Promise<number> {
  const { cluster, store, events, logger } = base;
  const { firing, upkeep, intake, pull } = parts;
  if (cluster)
    await life.start({ name: 'cluster', start: () => cluster.start(), stop: () => cluster.stop() }, 'cluster');
  // Before the scheduler claims anything: events executing under this node's id belong to a
  // previous run (a fixed --node-id), and on a single-node store every executing event does.
  // On a shared store, other nodes' claims are rescued when their leases expire. The rescued
  // events are due now; the scheduler's first read-ahead starts from the oldest due.
  const rescued = await upkeep.rescuer.rescuePreviousRuns(cluster === null);
  // Cluster: events due soon that other nodes wrote come into this node's timer when announced.
  // Subscribed before the scheduler starts (the last step that can fail); what is announced before
  // it runs, its first read-ahead reads from the store.
  if (cluster && store.dueWakeups) await life.start(wakeupsService(store.dueWakeups, events, logger), 'cluster');
  await life.start(schedulerService(firing.scheduler, firing.occurrences), 'firing');
  await life.start(loopService('materialiser', firing.materialiser), 'firing');
  // The first count runs in the background: a node on 10,000,000 events takes seconds over it.
  // Started in the reverse of the order they stop in (the rescuer first, the forecast last).
  const loops = {
    forecast: upkeep.forecast,
    counts: parts.counts,
    cleaner: upkeep.cleaner,
    'pull expirer': pull.pullExpirer,
  };
  for (const [name, loop] of Object.entries(loops)) await life.start(loopService(name, loop), 'maintenance');
  if (cluster) await life.start(loopService('rescuer', upkeep.rescuer), 'maintenance');
  // Readers leave their consumer groups first at the stop: their partitions go to the other nodes.
  await life.start(loopService('bulk', intake.bulk), 'intake');
  await life.start(loopService('sources', intake.sources), 'intake');
  return rescued;
}

function clusterOf(
  config: NodeConfig,
  opts: NodeOptions,
  store: Store,
  nodeId: string,
  logger: Logger,
  scheduler: () => Scheduler,
): Cluster {
  const localClock = opts.clock ?? new SystemClock();
  const deps = { store, localClock, nodeId, logger, shardCount: config.shardCount, meta: { pid: process.pid } };
  return new Cluster({ ...deps, onShardsChanged: () => scheduler().shardsChanged() }, opts.cluster);
}

/** What the API shows of this node's dispatcher, and tells it of changed destinations and secrets. */
function dispatcherViews(dispatcher: Dispatcher, nodeId: string, logger: Logger) {
  return {
    onDestinationChanged: (tenantId: string, name: string) => {
      dispatcher.destinationChanged(tenantId, name).catch((err) => logger.error({ err }, 'destination refresh failed'));
    },
    onTenantSecretsChanged: (tenantId: string) => dispatcher.tenantSecretsChanged(tenantId),
    destinationHealth: (tenantId: string, name: string) => ({ nodeId, queue: dispatcher.queueHealth(tenantId, name) }),
  };
}

/**
 * The API, stopped first: parked claims answer now (with nothing), so closing the server does not
 * wait out their waits. A connection whose request never arrives (a client that connected and
 * gave up, as an aborted long-poll claim may leave) would hold app.close() for the server's
 * headers timeout (a minute or more): at the shutdown deadline every connection still open is closed.
 */
function apiService(app: FastifyInstance, pullWaiters: PullWaiters, clock: Clock): Service {
  return {
    name: 'api',
    stop: async (deadlineMonoMs) => {
      pullWaiters.close();
      const forceClose = setTimeout(
        () => app.server.closeAllConnections(),
        Math.max(0, deadlineMonoMs - clock.monotonicMs()),
      );
      await app.close();
      clearTimeout(forceClose);
    },
  };
}

/** The scheduler; at its stop, the occurrence gate's counts not yet written are written. */
function schedulerService(scheduler: Scheduler, occurrences: OccurrenceGate): Service {
  return {
    name: 'scheduler',
    start: () => scheduler.start(),
    stop: async () => {
      await scheduler.stop();
      await occurrences.flush();
    },
  };
}

/** Cluster: the due wake-ups other nodes announce, into this node's bus. */
function wakeupsService(wakeups: DueWakeups, events: EventBus, logger: Logger): Service {
  let subscription: { close(): Promise<void> } | null = null;
  return {
    name: 'due wake-ups',
    start: async () => {
      subscription = await wakeups.subscribe(
        (refs) => events.due(refs),
        (err) =>
          logger.warn(
            { err: err.message },
            'due wake-ups: the LISTEN connection failed; reconnecting (the sweep finds what is missed)',
          ),
      );
    },
    stop: () => subscription?.close(),
  };
}

function portOf(app: FastifyInstance, config: NodeConfig): number {
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : config.port;
}

function urlOf(app: FastifyInstance, config: NodeConfig): string {
  return `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${portOf(app, config)}`;
}
