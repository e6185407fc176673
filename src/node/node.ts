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
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { createApp } from '../api/app.ts';
import { DEFAULT_API_LIMITS, type ApiLimits } from '../api/deps.ts';
import type { ClusterView } from '../api/schemas/cluster.ts';
import { HttpChannel } from '../channels/http/http-channel.ts';
import { openHttpThreadChannel } from '../channels/http/delivery-threads.ts';
import type { Channel } from '../channels/channel.ts';
import { ChannelRegistry } from '../channels/registry.ts';
import { AddressPolicy } from '../core/address.ts';
import { SteadyClock, SystemClock, type Clock } from '../core/clock.ts';
import { newSecretToken } from '../core/ids.ts';
import { Dispatcher } from '../dispatch/dispatcher.ts';
import { Cleaner, type CleanerOptions } from '../scheduler/cleaner.ts';
import { madeAheadMs, Materialiser, type MaterialiserOptions } from '../scheduler/materialiser.ts';
import { OccurrenceGate } from '../scheduler/occurrence-gate.ts';
import { occurrenceLimits, type OccurrenceLimits } from '../api/occurrence-limits.ts';
import { SourceManager, type SourceManagerOptions } from '../sources/manager.ts';
import { KafkaSourceReader } from '../sources/kafka/reader.ts';
import { SourceIngest } from '../api/source-ingest.ts';
import { TenantQuotas } from '../api/tenant-quotas.ts';
import { Rescuer } from '../scheduler/rescuer.ts';
import { PullExpirer } from '../dispatch/pull-expirer.ts';
import { PullWaiters, type PullWaitersOptions } from '../dispatch/pull-waiters.ts';
import { Scheduler, type SchedulerOptions } from '../scheduler/scheduler.ts';
import { CountSampler, type CountSamplerOptions } from '../store/count-sampler.ts';
import { ForecastSampler } from '../store/forecast-sampler.ts';
import { BulkRunner, type BulkRunnerOptions } from '../scheduler/bulk-runner.ts';
import { GroupCommitter } from '../store/group-commit.ts';
import { openPostgresStore } from '../store/postgres/postgres-store.ts';
import { QUICK_CHECK_MS_MAX } from '../store/sqlite/integrity-check.ts';
import { openSqliteThreadStore } from '../store/sqlite/thread-store.ts';
import { dueRefOf, type DueRef, type Store } from '../store/store.ts';
import { FIREABLE_STATES, type EventRecord } from '../core/event.ts';
import { Cluster, type ClusterOptions } from './cluster.ts';
import type { NodeConfig } from './config.ts';
import { makePrivateDir, PRIVATE_FILE_MODE, tightenDataDir } from './data-dir.ts';
import { createLogger } from './logger.ts';
import { Metrics } from './metrics.ts';
import { StorageWatch } from './storage-watch.ts';
import { busyThreadsOf, eventLoopThread } from './thread-busy.ts';

/** Shards listed in GET /v1/cluster's lag, the latest first. */
const CLUSTER_LAG_SHARDS_MAX = 64;
/** How often a cluster node looks for claims whose lease ended (their node died). */
const RESCUE_INTERVAL_MS = 2_000;

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

/**
 * `sqlite`, or a `postgres://` URL; a `schema` query parameter picks the PostgreSQL schema
 * (default `belfry`), so several clusters or test runs can share one database.
 */
async function openStore(config: NodeConfig, logger: Logger, storage: StorageWatch | null): Promise<Store> {
  if (config.store === 'sqlite') {
    const store = await openSqliteThreadStore({ dataDir: config.dataDir, integrityCheckMsMax: QUICK_CHECK_MS_MAX });
    if (storage) store.onCallError = (err) => storage.observe(err);
    const check = store.integrity;
    const file = { file: store.filePath, bytes: check?.bytes, ms: check?.ms };
    if (check?.status === 'ok') logger.info(file, 'database file checked (PRAGMA quick_check: ok)');
    else if (check?.status === 'timed_out') {
      logger.warn(file, `the database file's quick_check did not finish within ${QUICK_CHECK_MS_MAX} ms; started without it (SQLite still refuses a damaged page when it reads one)`);
    } else if (check?.status === 'not_run') logger.warn({ ...file, error: check.error }, "the database file's quick_check could not run; started without it");
    return store;
  }
  const url = new URL(config.store);
  const schema = url.searchParams.get('schema') ?? undefined;
  url.searchParams.delete('schema');
  return openPostgresStore({
    url: url.toString(),
    schema,
    onPoolError: (err) => logger.warn({ err: err.message }, 'a pooled PostgreSQL connection failed'),
  });
}

/**
 * The data dir (when this node uses one: SQLite, or to keep a generated admin key) is made 0700
 * with every file in it 0600: created so, and an existing one tightened, saying so in the log.
 */
function prepareDataDir(config: NodeConfig, logger: Logger): void {
  if (config.store !== 'sqlite' && config.adminKey) return;
  makePrivateDir(config.dataDir);
  const { tightened, failed } = tightenDataDir(config.dataDir);
  for (const t of tightened) logger.warn(t, 'tightened the mode of a data-dir entry (it holds secrets: the dir is 0700, its files 0600)');
  for (const f of failed) logger.warn(f, 'could not tighten the mode of a data-dir entry; make it readable by this user only');
}

/**
 * The admin key: from config, else the one saved in the data dir, else a new one, saved there
 * (mode 0600) and printed once to stderr.
 */
function resolveAdminKey(config: NodeConfig, logger: Logger): string {
  if (config.adminKey) return config.adminKey;
  const file = join(config.dataDir, 'admin.key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const key = newSecretToken('bk_admin_');
  writeFileSync(file, key + '\n', { mode: PRIVATE_FILE_MODE, flag: 'wx' });
  // The mode given at creation is cut by the umask; this one is not.
  chmodSync(file, PRIVATE_FILE_MODE);
  process.stderr.write(
    `\nBelfry generated an admin key (shown once; it is saved in ${file}):\n\n  ${key}\n\n` +
      `Create a tenant:  curl -s -X POST -H "Authorization: Bearer ${key}" -H 'content-type: application/json' \\\n` +
      `                    -d '{"name":"my-team"}' http://${config.host}:${config.port}/v1/tenants\n\n`,
  );
  logger.info({ file }, 'generated an admin key');
  return key;
}

/** What a start has opened, closed in reverse when a later step of it fails. */
class Startup {
  private readonly undo: (() => Promise<unknown>)[] = [];

  made(undo: () => Promise<unknown>): void {
    this.undo.push(undo);
  }

  /** Closes everything made so far, newest first; a failure to close one does not keep the others open. */
  async unwind(logger: Logger): Promise<void> {
    for (const undo of this.undo.reverse()) await undo().catch((err: unknown) => logger.warn({ err }, 'closing after a failed start failed'));
    this.undo.length = 0;
  }
}

export async function startNode(config: NodeConfig, opts: NodeOptions = {}): Promise<BelfryNode> {
  const owner = config.nodeId ?? `node-${randomBytes(6).toString('hex')}`;
  const logger = opts.logger ?? createLogger(config.logLevel, owner);
  const startup = new Startup();
  try {
    return await startNodeOnce(config, opts, owner, logger, startup);
  } catch (err) {
    // Nothing half started is left running: no timer, no thread, no lock on the data dir.
    await startup.unwind(logger);
    logger.error({ err: (err as Error).message }, 'start failed; closed everything it had opened');
    throw err;
  }
}

async function startNodeOnce(config: NodeConfig, opts: NodeOptions, owner: string, logger: Logger, startup: Startup): Promise<BelfryNode> {
  const startedAt = Date.now();
  prepareDataDir(config, logger);
  const adminKey = resolveAdminKey(config, logger);
  const storage = config.store === 'sqlite'
    ? new StorageWatch({
        dataDir: config.dataDir,
        onChange: (full, { freeBytes }) => {
          if (full) logger.error({ dataDir: config.dataDir }, 'the disk is full: writes are refused (503 storage_full) and /readyz says storage_full until there is room');
          else logger.info({ dataDir: config.dataDir, freeBytes }, 'the disk has room again: ready');
        },
      })
    : null;
  const store = await openStore(config, logger, storage);
  startup.made(() => store.close());
  await store.migrate();
  const metrics = new Metrics({ defaultMetrics: true });

  // eslint-disable-next-line prefer-const
  let scheduler: Scheduler;
  const cluster = store.capabilities.multiNode
    ? new Cluster(
        { store, localClock: opts.clock ?? new SystemClock(), nodeId: owner, logger, shardCount: config.shardCount, meta: { pid: process.pid }, onShardsChanged: () => scheduler.shardsChanged() },
        opts.cluster,
      )
    : null;
  // On a shared store, due times, stored timestamps and leases follow the store's clock. On one
  // node, leases (pull visibility timeouts) run on monotonic time: a step of the wall clock
  // neither ends a consumer's claim early nor stretches it.
  const clock: Clock = cluster ? cluster.clock : (opts.clock ?? new SystemClock());
  const leaseClock: Clock = cluster ? cluster.clock : new SteadyClock(clock);
  const addressPolicy = new AddressPolicy(config.allowHosts);
  // One channel per destination kind behind the registry; `opts.channel` replaces the webhook one.
  // Webhooks take threads of their own unless told not to, or unless time is simulated (a
  // thread's timers run on the system clock).
  const http =
    opts.channel ??
    (config.deliveryThreads > 0 && !opts.clock
      ? await openHttpThreadChannel(config.deliveryThreads, { allowHosts: config.allowHosts })
      : new HttpChannel({ clock, policy: addressPolicy }));
  const channel = new ChannelRegistry({ http, policy: addressPolicy, clock });
  startup.made(() => channel.close());
  metrics.watchThreads(() => [eventLoopThread(), ...busyThreadsOf(store), ...busyThreadsOf(http)]);

  let stopping = false;
  /** Set once every loop runs: until then /readyz says `starting`. */
  let started = false;
  /** The store's ping failed last time /readyz asked (its error is logged once, not answered). */
  let storeDown = false;
  const dispatcher = new Dispatcher({
    store,
    clock,
    channel,
    owner,
    metrics,
    logger,
    onRetry: (refs) => scheduler.notifyDue(refs),
    onGroupTerminal: (tenantId, group) => {
      scheduler.kickGroup(tenantId, group).catch((err) => logger.error({ err, group }, 'group kick failed'));
    },
    onRoom: () => scheduler.roomFreed(),
  });
  // Occurrences made ahead that reach their fire late follow their schedule's `missed` then; each
  // that fires is a scheduling request of its tenant, and each made a pending event (set below,
  // once the tenant quotas exist).
  let occurrenceQuota: OccurrenceLimits | undefined;
  const occurrences = new OccurrenceGate({
    store, clock, logger,
    onEventsChanged: (events) => {
      scheduler.notifyEvents(events);
      pullWaiters.wakeEvents(events);
      announceDue(events);
    },
    onMissed: (n) => metrics.scheduleOccurrences.inc({ outcome: 'missed' }, n),
    admitFire: (tenantId) => (occurrenceQuota ? occurrenceQuota.admitFire(tenantId) : null),
  });
  scheduler = new Scheduler(
    {
      store,
      clock,
      owner,
      metrics,
      logger,
      occurrences,
      onClaimed: (events) => dispatcher.submit(events),
      onDueSoon: (queues) => dispatcher.prepare(queues),
      dispatchBacklog: () => dispatcher.backlog,
      queueRoom: (queueKey) => dispatcher.queueRoom(queueKey),
      queueBound: (queueKey) => dispatcher.queueBound(queueKey),
      shards: () => (cluster ? cluster.ownership.shards() : null),
    },
    {
      lookaheadMs: config.lookaheadMs,
      ...(cluster ? { fenceClaims: true, leaseMs: cluster.opts.claimLeaseMs } : {}),
      ...opts.scheduler,
    },
  );
  const materialiser = new Materialiser(
    {
      store,
      clock,
      logger,
      shardCount: config.shardCount,
      shards: () => (cluster ? cluster.ownership.shards() : null),
      onEventsCreated: (events) => {
        scheduler.notifyEvents(events);
        pullWaiters.wakeEvents(events);
        announceDue(events);
      },
      onAdvanced: ({ made, missed }) => {
        if (made > 0) metrics.scheduleOccurrences.inc({ outcome: 'made' }, made);
        if (missed > 0) metrics.scheduleOccurrences.inc({ outcome: 'missed' }, missed);
      },
      limits: {
        admitMade: async (tenantId, n) => (occurrenceQuota ? occurrenceQuota.admitMade(tenantId, n) : null),
        made: (tenantId, n) => occurrenceQuota?.made(tenantId, n),
      },
    },
    { horizonMs: Math.max(config.scheduleHorizonMs, config.lookaheadMs), refillMs: Math.max(config.scheduleHorizonMs, config.lookaheadMs), ...opts.materialiser },
  );
  // Pull destinations: parked claims (woken by writes of their queues) and the expiry of claims
  // whose visibility timeout ended. A settled grouped event lets its group's next event go, pushed
  // or pulled.
  const pullWaiters = new PullWaiters(clock, opts.pull);
  const onPullSettled = (events: EventRecord[]) => {
    pullWaiters.wakeEvents(events);
    for (const e of events) {
      if (e.group !== null && (e.state === 'succeeded' || e.state === 'discarded' || e.state === 'archived')) {
        scheduler.kickGroup(e.tenantId, e.group).catch((err) => logger.error({ err, group: e.group }, 'group kick failed'));
      }
    }
  };
  const pullExpirer = new PullExpirer({
    store, clock, leaseClock, logger,
    onSettled: (events) => {
      for (const e of events) metrics.pullEnded.inc({ action: 'expire', state: e.state });
      onPullSettled(events);
    },
  }, opts.pull?.expireIntervalMs);
  const rescuer = new Rescuer({ store, clock, owner, logger, onRescued: (refs) => scheduler.notifyDue(refs) }, RESCUE_INTERVAL_MS);
  // Every node of a cluster counts the shared store: each waits as many times longer.
  const sharers = cluster ? async () => (await cluster.status()).nodes.filter((n) => n.live).length : undefined;
  const counts = new CountSampler({ store, clock, logger, sharers }, opts.counts);
  counts.onSample(() => metrics.eventsSamples.inc());
  const forecast = new ForecastSampler({ store, clock, logger, registry: metrics.registry });
  // Bulk jobs: each runs on the node holding its lease; the changes reach this node's timers (and
  // the other nodes', through the same announcement as an API write).
  const bulk = new BulkRunner({
    store, clock, logger, owner,
    onEventsChanged: (events) => {
      scheduler.notifyEvents(events);
      pullWaiters.wakeEvents(events);
      announceDue(events);
    },
  }, opts.bulk);
  const writer = new GroupCommitter(store, () => clock.now(), { onRejected: () => metrics.writeQueueRejected.inc() });
  // Retention: the leader cleans; a single node (SQLite) is always its own leader.
  const cleaner = new Cleaner(
    {
      store,
      clock,
      logger,
      isLeader: () => (cluster ? cluster.elector.isLeader : true),
      onBatch: (b) => {
        metrics.retentionDeleted.inc({ table: 'events', state: b.state }, b.events);
        metrics.retentionDeleted.inc({ table: 'transitions', state: b.state }, b.transitions);
        metrics.retentionBatchDurationSeconds.observe(b.durationMs / 1_000);
      },
      onPass: (p) => {
        metrics.retentionPassDurationSeconds.observe(p.durationMs / 1_000);
        metrics.retentionLastPassSeconds.set(clock.now() / 1_000);
      },
    },
    {
      defaults: config.retention,
      intervalMs: config.retentionIntervalMs,
      batchSizeMax: config.retentionBatchSize,
      deletesPerSecondMax: config.retentionDeletesPerSecond,
      ...opts.cleaner,
    },
  );

  /** GET /v1/cluster: the cluster as this node sees it, or this one node owning every shard. */
  const clusterView = async (): Promise<ClusterView> => {
    const now = clock.now();
    const lagRows = await store.shardLag({ now, limit: CLUSTER_LAG_SHARDS_MAX });
    const iso = (ms: number) => new Date(ms).toISOString();
    if (!cluster) {
      return {
        mode: 'single',
        nodeId: owner,
        leader: null,
        shardCount: config.shardCount,
        unassignedShards: 0,
        clockSkewMs: 0,
        nodes: [{ id: owner, live: true, heartbeatAgeMs: 0, shards: config.shardCount, startedAt: iso(startedAt) }],
        lag: lagRows.map((l) => ({ shard: l.shard, nodeId: owner, dueEvents: l.dueEvents, lagMs: now - l.oldestDueAt })),
      };
    }
    const [status, shardMap] = await Promise.all([cluster.status(), store.shardList()]);
    const ownerOf = new Map(shardMap.map((a) => [a.shard, a.nodeId]));
    return {
      mode: 'cluster',
      nodeId: owner,
      leader: status.leader ? { nodeId: status.leader.nodeId, epoch: status.leader.epoch, expiresAt: iso(status.leader.expiresAt) } : null,
      shardCount: status.shardCount,
      unassignedShards: status.unassignedShards,
      clockSkewMs: status.clockSkewMs,
      nodes: status.nodes.map((n) => ({ id: n.id, live: n.live, heartbeatAgeMs: n.heartbeatAgeMs, shards: n.shards, startedAt: iso(n.startedAt) })),
      lag: lagRows.map((l) => ({ shard: l.shard, nodeId: ownerOf.get(l.shard) ?? null, dueEvents: l.dueEvents, lagMs: now - l.oldestDueAt })),
    };
  };

  const apiLimits = { ...DEFAULT_API_LIMITS, ...config.limits, bodyBytesInFlightMax: config.bodyBytesInFlightMax, ...opts.limits };
  // Kafka sources: their events are checked and stored as POST /v1/events's are (source-ingest.ts).
  // One TenantQuotas for the API and the sources: a tenant's rate and pending estimate cover both.
  const quotas = new TenantQuotas(store, clock, apiLimits, counts);
  occurrenceQuota = occurrenceLimits(quotas);
  const sourceIngest = new SourceIngest({
    store,
    clock,
    writer,
    quotas,
    shardCount: config.shardCount,
    addressPolicy,
    messageBytesMax: apiLimits.bodyBytesMax,
    onEventsCreated: (events) => {
      metrics.eventsScheduled.inc(events.length);
      scheduler.notifyEvents(events);
      pullWaiters.wakeEvents(events);
      announceDue(events);
    },
  });
  const sources = new SourceManager({
    store,
    clock,
    logger,
    makeReader: (source, report, onCrash) => new KafkaSourceReader({
      source, sink: sourceIngest, policy: addressPolicy, now: () => clock.now(), sleep: (ms, signal) => clock.sleep(ms, signal),
      report: (r) => {
        if (r.acceptedAdd > 0) metrics.sourceMessages.inc({ outcome: 'accepted' }, r.acceptedAdd);
        if (r.rejectedAdd > 0) metrics.sourceMessages.inc({ outcome: 'rejected' }, r.rejectedAdd);
        return report(r);
      },
      onCrash,
    }),
    onReaderFailed: () => metrics.sourceReaderFailures.inc(),
  }, opts.sources);

  const app = await createApp({
    store,
    clock,
    leaseClock,
    writer,
    metrics,
    counts,
    logger,
    adminKey,
    shardCount: config.shardCount,
    scheduleAheadMs: madeAheadMs(materialiser.opts),
    limits: apiLimits,
    retention: cleaner.opts.defaults,
    addressPolicy,
    quotas,
    onEventsChanged: (events) => {
      scheduler.notifyEvents(events);
      announceDue(events);
    },
    pullWaiters,
    onPullSettled,
    onDestinationChanged: (tenantId, name) => {
      dispatcher.destinationChanged(tenantId, name).catch((err) => logger.error({ err }, 'destination refresh failed'));
    },
    onTenantSecretsChanged: (tenantId) => dispatcher.tenantSecretsChanged(tenantId),
    clusterStatus: () => clusterView(),
    destinationHealth: (tenantId, name) => ({ nodeId: owner, queue: dispatcher.queueHealth(tenantId, name) }),
    // Stable reason codes only: /readyz is unauthenticated, and a store's error text names hosts,
    // files and users. The errors themselves go to the log.
    ready: async () => {
      const reasons: string[] = [];
      if (stopping) reasons.push('shutting_down');
      else if (!started) reasons.push('starting');
      if (cluster && cluster.ownership.shards().length === 0) reasons.push('no_shards');
      try {
        await store.ping();
        if (storeDown) logger.info('readiness: the store answers again');
        storeDown = false;
      } catch (err) {
        if (!storeDown) logger.warn({ err: (err as Error).message }, 'readiness: the store does not answer');
        storeDown = true;
        reasons.push('store_unreachable');
      }
      if (storage) reasons.push(...(await storage.reasons()));
      return { ok: reasons.length === 0, reasons };
    },
  });
  startup.made(() => app.close());

  /**
   * Cluster: events this node committed that are due within the look-ahead and belong to another
   * node's shards are announced (Store.dueWakeups): the owner may have read past them already.
   */
  function announceDue(events: EventRecord[]): void {
    const announcer = store.dueWakeups;
    if (!cluster || !announcer) return;
    const owned = new Set(cluster.ownership.shards());
    const horizon = clock.now() + config.lookaheadMs;
    const refs: DueRef[] = [];
    for (const e of events) {
      if (!FIREABLE_STATES.includes(e.state) || e.dueAt > horizon || owned.has(e.shard)) continue;
      refs.push(dueRefOf(e));
    }
    if (refs.length > 0) announcer.announce(refs).catch((err) => logger.warn({ err: (err as Error).message, count: refs.length }, 'announcing events due soon failed; their owners find them by the sweep'));
  }

  // Listen before anything fires: a node that cannot serve its API must not fire, deliver or
  // join a cluster (its start fails, undoing what it opened). Requests served before the loops
  // start are safe: the scheduler ignores notifications until it runs, then reads what is due.
  await app.listen({ port: config.port, host: config.host }).catch((err: Error) => {
    throw new Error(`cannot listen on ${config.host}:${config.port}: ${err.message}`, { cause: err });
  });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;

  if (cluster) {
    await cluster.start();
    startup.made(() => cluster.stop());
  }
  // Before the scheduler claims anything: events executing under this node's id belong to a
  // previous run (a fixed --node-id), and on a single-node store every executing event does.
  // On a shared store, other nodes' claims are rescued when their leases expire. The rescued
  // events are due now; the scheduler's first read-ahead starts from the oldest due.
  const rescued = await rescuer.rescuePreviousRuns(cluster === null);
  // Cluster: events due soon that other nodes wrote come into this node's timer when announced.
  // Subscribed before the scheduler starts (the last step that can fail); what is announced before
  // it runs, its first read-ahead reads from the store.
  const wakeups =
    cluster && store.dueWakeups
      ? await store.dueWakeups.subscribe(
          (refs) => scheduler.notifyDue(refs),
          (err) => logger.warn({ err: err.message }, 'due wake-ups: the LISTEN connection failed; reconnecting (the sweep finds what is missed)'),
        )
      : null;
  scheduler.start();
  materialiser.start();
  if (cluster) rescuer.start();
  pullExpirer.start();
  cleaner.start();
  // The first count runs in the background: a node on 10,000,000 events takes seconds over it.
  counts.start();
  forecast.start();
  bulk.start();
  sources.start();
  started = true;
  logger.info({ port, host: config.host, url, owner, store: config.store === 'sqlite' ? `sqlite:${config.dataDir}` : 'postgres', rescued }, 'listening');

  let stopped: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      stopping = true;
      const deadlineMs = clock.monotonicMs() + config.shutdownTimeoutMs;
      logger.info({ shutdownTimeoutMs: config.shutdownTimeoutMs }, 'shutting down');
      // Parked claims answer now (with nothing), so closing the server does not wait out their waits.
      pullWaiters.close();
      // A connection whose request never arrives (a client that connected and gave up, as an
      // aborted long-poll claim may leave) would hold app.close() for the server's headers timeout
      // (a minute or more): at the shutdown deadline every connection still open is closed.
      const forceClose = setTimeout(() => app.server.closeAllConnections(), Math.max(0, deadlineMs - clock.monotonicMs()));
      await app.close();
      clearTimeout(forceClose);
      // Readers leave their consumer groups first: their partitions go to the other nodes.
      await sources.stop();
      await bulk.stop();
      // Stop firing, resign and leave first, so other nodes take the shards over while we drain.
      await cluster?.stop();
      await wakeups?.close();
      await materialiser.stop();
      await scheduler.stop();
      await occurrences.flush();
      await rescuer.stop();
      await pullExpirer.stop();
      await cleaner.stop();
      await counts.stop();
      await forecast.stop();
      await dispatcher.drain(deadlineMs);
      await channel.close();
      await store.close();
      logger.info('stopped');
    })();
    return stopped;
  };

  return { url, port, app, store, scheduler, dispatcher, metrics, cleaner, materialiser, counts, forecast, bulk, sources, adminKey, cluster, stop };
}
