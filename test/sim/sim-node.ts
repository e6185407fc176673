/**
 * One simulated Belfry node, composed as src/node/node.ts composes a cluster node (without the
 * API, the sources, the cleaner and the samplers): the cluster (StoreClock, membership, elector,
 * shard ownership, claim-lease renewal), the scheduler with its occurrence gate, the dispatcher
 * and its recorder, the materialiser, the rescuer and the pull expirer, all on this node's clock
 * and its own connection to the shared store. Pull consumers and API clients are the world's.
 *
 * Kill: the process is gone at once (its timers never run, its calls never answer; what it sent
 * before still reaches the store). Pause: nothing of it runs until it resumes. Stop: the graceful
 * shutdown of node.ts, in its order.
 */
import pino from 'pino';
import type { Cluster } from '../../src/cluster/cluster.ts';
import type { Dispatcher } from '../../src/dispatch/dispatcher.ts';
import type { Materialiser } from '../../src/schedules/materialiser.ts';
import type { OccurrenceGate } from '../../src/schedules/occurrence-gate.ts';
import type { Rescuer } from '../../src/maintenance/rescuer.ts';
import type { BulkRunner } from '../../src/bulk/runner.ts';
import type { PullExpirer } from '../../src/pull/expirer.ts';
import type { Scheduler } from '../../src/scheduler/scheduler.ts';
import type { Metrics } from '../../src/node/metrics.ts';
import type { Store } from '../../src/store/store.ts';
import type { EventRecord } from '../../src/core/event.ts';
import type { EventSink } from '../../src/core/event-sink.ts';
import type { DueRef } from '../../src/store/store.ts';
import type { Belfry } from './belfry.ts';
import type { Remote } from './remote.ts';
import type { Database } from './database.ts';
import { StoreLink, type StoreObserver, type WakeupHub } from './store-link.ts';
import { Actor, NodeClock, type Prng, type World } from './world.ts';

const logger = pino({ level: 'silent' });

export interface NodeSettings {
  shardCount: number;
  lookaheadMs: number;
  claimLeaseMs: number;
  /** The scheduler's memory bounds, small so that a run reaches them. */
  wheelSizeMax: number;
  queueRefsMax: number;
  dispatchBacklogMax: number;
  listBatchMax: number;
  claimBatchMax: number;
  horizonMs: number;
  shutdownTimeoutMs: number;
}

export const NODE_SETTINGS: NodeSettings = {
  shardCount: 16,
  lookaheadMs: 3_000,
  claimLeaseMs: 15_000,
  wheelSizeMax: 400,
  queueRefsMax: 100,
  dispatchBacklogMax: 200,
  listBatchMax: 100,
  claimBatchMax: 50,
  horizonMs: 10_000,
  shutdownTimeoutMs: 5_000,
};

/** How often a cluster node looks for claims whose lease ended (node.ts RESCUE_INTERVAL_MS). */
const RESCUE_INTERVAL_MS = 2_000;

export class SimNode {
  readonly actor: Actor;
  readonly clock: NodeClock;
  readonly link: StoreLink;
  readonly cluster: Cluster;
  readonly scheduler: Scheduler;
  readonly dispatcher: Dispatcher;
  readonly materialiser: Materialiser;
  readonly rescuer: Rescuer;
  readonly pullExpirer: PullExpirer;
  readonly gate: OccurrenceGate | null;
  readonly bulk: BulkRunner | null;
  started = false;
  private wakeups: { close(): Promise<void> } | null = null;
  /** Faults at chosen points: what happened to the node there. */
  hooks: { afterClaim?(node: SimNode, events: EventRecord[]): 'none' | 'killed' | 'paused' } = {};
  stopping: Promise<void> | null = null;

  constructor(
    readonly label: string,
    readonly nodeId: string,
    belfry: Belfry,
    world: World,
    rand: Prng,
    real: Store,
    remote: Remote,
    observer: StoreObserver,
    metrics: Metrics,
    skewMs: number,
    readonly settings: NodeSettings,
    hub: WakeupHub,
    db: Database,
  ) {
    this.actor = new Actor(label);
    this.clock = new NodeClock(world, this.actor, skewMs);
    this.link = new StoreLink(world, rand.fork(), real, this.actor, label, observer, hub, db);
    const store = this.link.store;
    const s = settings;
    let scheduler: Scheduler | null = null;
    this.cluster = new belfry.cluster.Cluster(
      {
        store,
        localClock: this.clock,
        nodeId,
        logger,
        shardCount: s.shardCount,
        meta: { sim: label },
        onShardsChanged: () => scheduler?.shardsChanged(),
      },
      { claimLeaseMs: s.claimLeaseMs },
    );
    const clock = this.cluster.clock;
    // The node's bus (node.ts): its writes to this.changed, the rest to the scheduler and pull settles.
    const sink = sinkDeps({
      changed: (events) => this.changed(events),
      due: (refs) => scheduler?.notifyDue(refs),
      groupSettled: (tenantId, group) => {
        scheduler?.kickGroup(tenantId, group).catch(() => {});
      },
      pullSettled: (events) => this.pullSettled(events),
    });
    const jitter = rand.fork();
    const dispatcher: Dispatcher = new belfry.dispatcher.Dispatcher({
      store,
      clock,
      channel: remote.channelFor(this.actor, label),
      owner: nodeId,
      metrics,
      logger,
      random: () => jitter.next(),
      ...sink,
      onRoom: () => scheduler?.roomFreed(),
    });
    this.dispatcher = dispatcher;
    this.gate = belfry.gate ? new belfry.gate.OccurrenceGate({ store, clock, logger, ...sink }) : null;
    scheduler = new belfry.scheduler.Scheduler(
      {
        store,
        clock,
        owner: nodeId,
        metrics,
        logger,
        occurrences: this.gate ?? undefined,
        // A fault may strike between the claim and the send (the node killed or paused there).
        onClaimed: (events) => {
          const hit = this.hooks.afterClaim?.(this, events) ?? 'none';
          if (hit === 'killed') return;
          if (hit === 'paused') world.timer(this.actor, 0, () => dispatcher.submit(events));
          else dispatcher.submit(events);
        },
        onDueSoon: (queues) => dispatcher.prepare(queues),
        dispatchBacklog: () => dispatcher.backlog,
        queueRoom: (queueKey) => dispatcher.queueRoom(queueKey),
        queueBound: (queueKey) => dispatcher.queueBound(queueKey),
        shards: () => this.cluster.ownership.shards(),
      },
      {
        lookaheadMs: s.lookaheadMs,
        fenceClaims: true,
        leaseMs: s.claimLeaseMs,
        wheelSizeMax: s.wheelSizeMax,
        queueRefsMax: s.queueRefsMax,
        dispatchBacklogMax: s.dispatchBacklogMax,
        listBatchMax: s.listBatchMax,
        claimBatchMax: s.claimBatchMax,
      },
    );
    this.scheduler = scheduler;
    this.materialiser = new belfry.materialiser.Materialiser(
      {
        store,
        clock,
        logger,
        shardCount: s.shardCount,
        shards: () => this.cluster.ownership.shards(),
        ...sink,
      },
      { horizonMs: s.horizonMs, refillMs: s.horizonMs },
    );
    this.rescuer = new belfry.rescuer.Rescuer({ store, clock, owner: nodeId, logger, ...sink }, RESCUE_INTERVAL_MS);
    // Bulk jobs: each runs on the node holding its lease; its changes reach the timers (node.ts).
    this.bulk = belfry.bulk ? new belfry.bulk.BulkRunner({ store, clock, logger, owner: nodeId, ...sink }) : null;
    // Pull claims' visibility timeouts: on a cluster they run on the store's clock (node.ts leaseClock).
    const expiry = rand.fork();
    this.pullExpirer = new belfry.pullExpirer.PullExpirer({
      store,
      clock,
      leaseClock: clock,
      logger,
      random: () => expiry.next(),
      ...sink,
    });
  }

  /** node/parts.ts's pullSettled listener: a settled grouped pull event lets its group's next event go. */
  pullSettled(events: EventRecord[]): void {
    for (const e of events) {
      if (e.group !== null && (e.state === 'succeeded' || e.state === 'discarded' || e.state === 'archived')) {
        this.scheduler.kickGroup(e.tenantId, e.group).catch(() => {});
      }
    }
  }

  /**
   * node.ts after a write of this node's (API, materialiser, gate): its scheduler follows the
   * events, and those due soon of other nodes' shards are announced (their owners may have read
   * past them).
   */
  changed(events: EventRecord[]): void {
    this.scheduler.notifyEvents(events);
    const announcer = this.link.store.dueWakeups;
    if (!announcer) return;
    const owned = new Set(this.cluster.ownership.shards());
    const horizon = this.cluster.clock.now() + this.settings.lookaheadMs;
    const refs: DueRef[] = [];
    for (const e of events) {
      if ((e.state !== 'scheduled' && e.state !== 'awaiting_retry') || e.dueAt > horizon || owned.has(e.shard))
        continue;
      refs.push({
        tenantId: e.tenantId,
        id: e.id,
        version: e.version,
        dueAt: e.dueAt,
        shard: e.shard,
        group: e.group,
        queue: e.queue,
      });
    }
    if (refs.length > 0) announcer.announce(refs).catch(() => {});
  }

  get alive(): boolean {
    return this.actor.state !== 'dead';
  }

  /** node.ts's start order: the cluster first, a previous run's claims rescued, then the loops. */
  async start(): Promise<void> {
    await this.cluster.start();
    await this.rescuer.rescuePreviousRuns(false);
    this.wakeups = await this.link.store.dueWakeups!.subscribe(
      (refs) => this.scheduler.notifyDue(refs),
      () => {},
    );
    this.scheduler.start();
    this.materialiser.start();
    this.rescuer.start();
    this.pullExpirer.start();
    this.bulk?.start();
    this.started = true;
  }

  /** node.ts's graceful stop (the parts this node has). */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const deadlineMs = this.clock.monotonicMs() + this.settings.shutdownTimeoutMs;
      await this.cluster.stop();
      await this.wakeups?.close();
      await this.materialiser.stop();
      await this.bulk?.stop();
      await this.scheduler.stop();
      await this.gate?.flush();
      await this.rescuer.stop();
      await this.pullExpirer.stop();
      await this.dispatcher.drain(deadlineMs);
    })();
    return this.stopping;
  }

  kill(): void {
    this.actor.state = 'dead';
  }
}

/**
 * A node's bus as its parts take it (`events`), with the callbacks that trees from before the
 * bus took instead beside it, so `--src` runs older trees (each part reads only its own).
 */
function sinkDeps(events: EventSink) {
  return {
    events,
    onEventsChanged: (e: EventRecord[]) => events.changed(e),
    onEventsCreated: (e: EventRecord[]) => events.changed(e),
    onRetry: (refs: DueRef[]) => events.due(refs),
    onRescued: (refs: DueRef[]) => events.due(refs),
    onGroupTerminal: (tenantId: string, group: string) => events.groupSettled(tenantId, group),
    onSettled: (e: EventRecord[]) => events.pullSettled(e),
  };
}
