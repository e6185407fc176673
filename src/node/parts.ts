/**
 * The parts of one node, built by role from what the node opened (NodeBase). Each builder makes
 * its role's objects and the listeners it adds to the node's one event bus; node.ts starts them
 * as services in order. Nothing here starts anything.
 *
 *   delivery:    channels (webhooks on threads of their own, brokers loaded on first use)
 *   firing:      dispatcher ◀─ scheduler (read-ahead, admission, claimer) ◀─ occurrence gate;
 *                materialiser (schedules' occurrences)
 *   pull:        parked claims, the expiry of claims whose visibility timeout ended
 *   maintenance: rescuer, cleaner (leader), count and forecast samplers
 *   intake:      group-commit writer, tenant quotas, Kafka sources, bulk jobs
 */
import type { Logger } from 'pino';
import { DEFAULT_API_LIMITS, type ApiLimits } from '../api/deps.ts';
import { EventIntake } from '../api/intake.ts';
import { SourceIngest } from '../api/source-ingest.ts';
import { TenantQuotas } from '../api/tenant-quotas.ts';
import { openHttpThreadChannel } from '../channels/http/delivery-threads.ts';
import { HttpChannel } from '../channels/http/http-channel.ts';
import { ChannelRegistry } from '../channels/registry.ts';
import type { Cluster } from '../cluster/cluster.ts';
import type { AddressPolicy } from '../core/address.ts';
import type { Clock } from '../core/clock.ts';
import { FIREABLE_STATES, dueRefOf, type DueRef, type EventRecord, type EventState } from '../core/event.ts';
import type { EventBus } from '../core/event-sink.ts';
import type { Lifecycle } from '../core/service.ts';
import { Dispatcher } from '../dispatch/dispatcher.ts';
import { Cleaner } from '../maintenance/cleaner.ts';
import { CountSampler } from '../maintenance/count-sampler.ts';
import { ForecastSampler } from '../maintenance/forecast-sampler.ts';
import { Rescuer } from '../maintenance/rescuer.ts';
import { Scheduler } from '../scheduler/scheduler.ts';
import { BulkRunner } from '../bulk/index.ts';
import { PullExpirer, PullWaiters } from '../pull/index.ts';
import { Materialiser, OccurrenceGate, occurrenceLimits } from '../schedules/index.ts';
import { lazyReader, SourceManager } from '../sources/index.ts';
import { GroupCommitter } from '../store/group-commit.ts';
import type { Store } from '../store/store.ts';
import { busyThreadsOf, eventLoopThread } from '../core/thread-busy.ts';
import type { NodeConfig } from './config.ts';
import type { Metrics } from './metrics.ts';
import type { NodeOptions } from './node.ts';

/** The states a settled pull event leaves in that let its group's next event go (ack, discard, archive). */
const GROUP_RELEASING_PULL_STATES: readonly EventState[] = ['succeeded', 'discarded', 'archived'];
/** How often a cluster node looks for claims whose lease ended (their node died). */
const RESCUE_INTERVAL_MS = 2_000;

/** What the node opened before building its parts. */
export interface NodeBase {
  config: NodeConfig;
  opts: NodeOptions;
  owner: string;
  logger: Logger;
  store: Store;
  metrics: Metrics;
  /** Null on a single-node store. */
  cluster: Cluster | null;
  /** Cluster time on a shared store (the store's clock), the node's clock otherwise. */
  clock: Clock;
  /** The clock of pull visibility timeouts (see deps.ts). */
  leaseClock: Clock;
  addressPolicy: AddressPolicy;
  /** The one event bus: every producer tells it, every follower listens to it. */
  events: EventBus;
}

/** The shards this node fires: null on a single node (all of them). */
function ownedShards(base: NodeBase): () => number[] | null {
  const { cluster } = base;
  return () => (cluster ? cluster.ownership.shards() : null);
}

/**
 * One channel per destination kind behind the registry; `opts.channel` replaces the webhook one.
 * Webhooks take threads of their own unless told not to, or unless time is simulated (a thread's
 * timers run on the system clock).
 */
export async function deliveryChannels(base: NodeBase): Promise<ChannelRegistry> {
  const { config, opts, clock, addressPolicy, store, metrics } = base;
  const http =
    opts.channel ??
    (config.deliveryThreads > 0 && !opts.clock
      ? await openHttpThreadChannel(config.deliveryThreads, { allowHosts: config.allowHosts })
      : new HttpChannel({ clock, policy: addressPolicy }));
  metrics.watchThreads(() => [eventLoopThread(), ...busyThreadsOf(store), ...busyThreadsOf(http)]);
  return new ChannelRegistry({ http, policy: addressPolicy, clock });
}

/** The API's limits: the defaults, then the config's, then the options'. */
export function apiLimitsOf(base: NodeBase): ApiLimits {
  const { config, opts } = base;
  return {
    ...DEFAULT_API_LIMITS,
    ...config.limits,
    bodyBytesInFlightMax: config.bodyBytesInFlightMax,
    ...opts.limits,
  };
}

/**
 * The tenants' quotas and the count sampler they read. One TenantQuotas for the API, the
 * schedules and the sources: a tenant's rate and pending estimate cover them all. Every node of
 * a cluster counts the shared store: each waits as many times longer.
 */
export function quotaParts(base: NodeBase, limits: ApiLimits) {
  const { store, clock, logger, cluster, metrics, opts } = base;
  const sharers = cluster ? async () => (await cluster.status()).nodes.filter((n) => n.live).length : undefined;
  const counts = new CountSampler({ store, clock, logger, sharers }, opts.counts);
  counts.onSample(() => metrics.eventsSamples.inc());
  return { counts, quotas: new TenantQuotas(store, clock, limits, counts) };
}

/**
 * Firing: the scheduler claims what falls due and hands it to the dispatcher; occurrences made
 * ahead that reach their fire late follow their schedule's `missed` (the occurrence gate), each
 * that fires a scheduling request of its tenant; the materialiser makes schedules' occurrences.
 */
export function firingParts(base: NodeBase, channel: ChannelRegistry, quotas: TenantQuotas) {
  const { store, clock, owner, metrics, logger, cluster, config, opts, events } = base;
  const occurrenceQuota = occurrenceLimits(quotas);
  const shards = ownedShards(base);
  const occurrences = new OccurrenceGate({
    store,
    clock,
    logger,
    events,
    onMissed: (n) => metrics.scheduleOccurrences.inc({ outcome: 'missed' }, n),
    admitFire: (tenantId) => occurrenceQuota.admitFire(tenantId),
  });
  const dispatcher: Dispatcher = new Dispatcher({
    store,
    clock,
    channel,
    owner,
    metrics,
    logger,
    events,
    onRoom: () => scheduler.roomFreed(),
  });
  const scheduler = new Scheduler(
    {
      store,
      clock,
      owner,
      metrics,
      logger,
      occurrences,
      onClaimed: (claimed) => dispatcher.submit(claimed),
      onDueSoon: (queues) => dispatcher.prepare(queues),
      dispatchBacklog: () => dispatcher.backlog,
      queueRoom: (queueKey) => dispatcher.queueRoom(queueKey),
      queueBound: (queueKey) => dispatcher.queueBound(queueKey),
      shards,
    },
    {
      lookaheadMs: config.lookaheadMs,
      ...(store.capabilities.readAheadPollMs
        ? { pollIntervalMs: Math.min(store.capabilities.readAheadPollMs, Math.max(250, config.lookaheadMs / 3)) }
        : {}),
      ...(store.capabilities.claimsInFlight ? { claimsInFlightMax: store.capabilities.claimsInFlight } : {}),
      ...(cluster ? { fenceClaims: true, leaseMs: cluster.opts.claimLeaseMs } : {}),
      ...opts.scheduler,
    },
  );
  const kick = (tenantId: string, group: string, shard?: number) =>
    scheduler.kickGroup(tenantId, group, shard).catch((err) => logger.error({ err, group }, 'group kick failed'));
  events.listen({
    changed: (e) => scheduler.notifyEvents(e),
    due: (refs) => scheduler.notifyDue(refs),
    groupSettled: kick,
    // A settled grouped pull event lets its group's next event go, pushed or pulled.
    pullSettled: (settled) => {
      for (const e of settled)
        if (e.group !== null && GROUP_RELEASING_PULL_STATES.includes(e.state)) kick(e.tenantId, e.group, e.shard);
    },
  });
  const materialiser = new Materialiser(
    {
      store,
      clock,
      logger,
      shardCount: config.shardCount,
      shards,
      events,
      onAdvanced: ({ made, missed }) => {
        if (made > 0) metrics.scheduleOccurrences.inc({ outcome: 'made' }, made);
        if (missed > 0) metrics.scheduleOccurrences.inc({ outcome: 'missed' }, missed);
      },
      limits: occurrenceQuota,
    },
    {
      horizonMs: Math.max(config.scheduleHorizonMs, config.lookaheadMs),
      refillMs: Math.max(config.scheduleHorizonMs, config.lookaheadMs),
      ...opts.materialiser,
    },
  );
  return { occurrences, dispatcher, scheduler, materialiser };
}

/**
 * Cluster: events this node committed that are due within the look-ahead and belong to another
 * node's shards are announced (Store.dueWakeups): the owner may have read past them already.
 */
export function announceDueSoon(base: NodeBase): void {
  const { store, cluster, clock, config, logger, events } = base;
  const announcer = store.dueWakeups;
  if (!cluster || !announcer) return;
  events.listen({
    changed: (changed: EventRecord[]) => {
      const owned = new Set(cluster.ownership.shards());
      const horizon = clock.now() + config.lookaheadMs;
      const refs: DueRef[] = [];
      for (const e of changed) {
        if (!FIREABLE_STATES.includes(e.state) || e.dueAt > horizon || owned.has(e.shard)) continue;
        refs.push(dueRefOf(e));
      }
      if (refs.length > 0)
        announcer
          .announce(refs)
          .catch((err) =>
            logger.warn(
              { err: (err as Error).message, count: refs.length },
              'announcing events due soon failed; their owners find them by the sweep',
            ),
          );
    },
  });
}

/** Pull destinations: claims parked until their queue has something (woken by the bus), and the expiry of claims whose visibility timeout ended. */
export function pullParts(base: NodeBase) {
  const { store, clock, leaseClock, logger, metrics, opts, events } = base;
  const pullWaiters = new PullWaiters(clock, opts.pull);
  events.listen({ changed: (e) => pullWaiters.wakeEvents(e), pullSettled: (e) => pullWaiters.wakeEvents(e) });
  const pullExpirer = new PullExpirer(
    {
      store,
      clock,
      leaseClock,
      logger,
      events: {
        pullSettled: (settled) => {
          for (const e of settled) metrics.pullEnded.inc({ action: 'expire', state: e.state });
          events.pullSettled(settled);
        },
      },
    },
    opts.pull?.expireIntervalMs,
  );
  return { pullWaiters, pullExpirer };
}

/** The background loops: the rescue of expired claims, retention (the leader cleans; a single node is its own leader), the forecast. */
export function maintenanceParts(base: NodeBase) {
  const { store, clock, owner, logger, metrics, cluster, config, opts, events } = base;
  const rescuer = new Rescuer({ store, clock, owner, logger, events }, RESCUE_INTERVAL_MS);
  const forecast = new ForecastSampler({ store, clock, logger, registry: metrics.registry });
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
  return { rescuer, forecast, cleaner };
}

/**
 * Work that comes from elsewhere than a request: Kafka sources (their events checked and stored
 * as POST /v1/events's are, source-ingest.ts; the Kafka client loaded with the first source's
 * reader) and bulk jobs (each on the node holding its lease). Also the group-commit writer the API
 * and the sources insert through.
 */
export function intakeParts(base: NodeBase, quotas: TenantQuotas, limits: ApiLimits) {
  const { store, clock, logger, owner, metrics, config, opts, events, addressPolicy } = base;
  const writer = new GroupCommitter(store, () => clock.now(), { onRejected: () => metrics.writeQueueRejected.inc() });
  const intake = new EventIntake({
    clock,
    shardCount: config.shardCount,
    addressPolicy,
    destinations: store,
    quotas,
    writer,
    metrics,
    events,
  });
  const sourceIngest = new SourceIngest({ intake, quotas, messageBytesMax: limits.bodyBytesMax });
  const sources = new SourceManager(
    {
      store,
      clock,
      logger,
      makeReader: (source, report, onCrash) =>
        lazyReader(
          async () =>
            new (await import('../sources/kafka/reader.ts')).KafkaSourceReader({
              source,
              sink: sourceIngest,
              policy: addressPolicy,
              now: () => clock.now(),
              sleep: (ms, signal) => clock.sleep(ms, signal),
              report: (r) => {
                if (r.acceptedAdd > 0) metrics.sourceMessages.inc({ outcome: 'accepted' }, r.acceptedAdd);
                if (r.rejectedAdd > 0) metrics.sourceMessages.inc({ outcome: 'rejected' }, r.rejectedAdd);
                return report(r);
              },
              onCrash,
            }),
        ),
      onReaderFailed: () => metrics.sourceReaderFailures.inc(),
    },
    opts.sources,
  );
  const bulk = new BulkRunner({ store, clock, logger, owner, events }, opts.bulk);
  return { writer, sources, bulk };
}

/** Every part of a node, built and wired to its bus; the channels and the dispatcher's drain are services of `life` already. */
export async function buildParts(base: NodeBase, life: Lifecycle) {
  const channel = await deliveryChannels(base);
  await life.start({ name: 'channels', stop: () => channel.close() }, 'delivery');
  const limits = apiLimitsOf(base);
  const { counts, quotas } = quotaParts(base, limits);
  const firing = firingParts(base, channel, quotas);
  await life.start({ name: 'dispatcher', stop: (deadline) => firing.dispatcher.drain(deadline) }, 'delivery');
  announceDueSoon(base);
  const pull = pullParts(base);
  const upkeep = maintenanceParts(base);
  const intake = intakeParts(base, quotas, limits);
  return { limits, counts, quotas, firing, pull, upkeep, intake };
}

export type Parts = Awaited<ReturnType<typeof buildParts>>;
