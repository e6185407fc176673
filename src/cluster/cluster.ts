/**
 * The cluster side of a node on a shared store: a store-calibrated clock, membership heartbeats,
 * the elector (leader lease and shard map), and this node's view of the shards it owns.
 * A single-node store (SQLite) runs none of it: the node owns every shard.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { runEvery } from '../core/loop.ts';
import { Elector } from './elector.ts';
import { Membership, type MembershipOptions } from './membership.ts';
import { ShardOwnership } from './shard-ownership.ts';
import { StoreClock } from './store-clock.ts';
import type { ClusterStore } from '../store/store.ts';

export interface ClusterOptions extends MembershipOptions {
  electorIntervalMs: number;
  leaderLeaseMs: number;
  ownershipIntervalMs: number;
  /** Lease of a claimed event; renewed every third of it while this node is alive. */
  claimLeaseMs: number;
}

export const DEFAULT_CLUSTER_OPTIONS: ClusterOptions = {
  heartbeatIntervalMs: 500,
  nodeTtlMs: 3_000,
  safetyMs: 750,
  electorIntervalMs: 500,
  leaderLeaseMs: 3_000,
  ownershipIntervalMs: 250,
  claimLeaseMs: 15_000,
};

export interface ClusterStatus {
  nodeId: string;
  leader: { nodeId: string; epoch: number; expiresAt: number } | null;
  nodes: {
    id: string;
    startedAt: number;
    heartbeatAgeMs: number;
    live: boolean;
    shards: number;
    meta: Record<string, unknown>;
  }[];
  shardCount: number;
  unassignedShards: number;
  clockSkewMs: number;
}

export class Cluster {
  private leaseAbort = new AbortController();
  private leaseLoop: Promise<void> | null = null;
  readonly clock: StoreClock;
  readonly membership: Membership;
  readonly elector: Elector;
  readonly ownership: ShardOwnership;
  readonly opts: ClusterOptions;

  constructor(
    private readonly deps: {
      store: ClusterStore;
      localClock: Clock;
      nodeId: string;
      logger: Logger;
      shardCount: number;
      meta: Record<string, unknown>;
      onShardsChanged(): void;
    },
    opts: Partial<ClusterOptions> = {},
  ) {
    this.opts = { ...DEFAULT_CLUSTER_OPTIONS, ...opts };
    const { store, localClock, nodeId, logger } = deps;
    this.clock = new StoreClock(localClock, store, logger);
    this.membership = new Membership(
      { store, clock: localClock, storeClock: this.clock, nodeId, logger, meta: deps.meta },
      this.opts,
    );
    this.elector = new Elector(
      {
        store,
        clock: localClock,
        nodeId,
        logger,
        reachableForMs: () => this.membership.reachableForMs(),
        mayLead: () => this.membership.isAlive(),
        storeClock: this.clock,
      },
      {
        intervalMs: this.opts.electorIntervalMs,
        leaseMs: this.opts.leaderLeaseMs,
        nodeTtlMs: this.opts.nodeTtlMs,
        shardCount: deps.shardCount,
      },
    );
    this.ownership = new ShardOwnership(
      { store, clock: localClock, nodeId, membership: this.membership, logger, onChange: () => deps.onShardsChanged() },
      this.opts.ownershipIntervalMs,
    );
  }

  /** Calibrates the clock and registers this node before anything fires. */
  async start(): Promise<void> {
    await this.clock.calibrate();
    await this.membership.runOnce();
    this.clock.start();
    this.membership.start();
    this.elector.start();
    this.ownership.start();
    this.leaseAbort = new AbortController();
    this.leaseLoop = this.renewClaimLeases();
  }

  /**
   * Keeps this node's claims (executing events) leased while it is alive, so the rescuers of
   * other nodes take over only the claims of a node that died or was cut off.
   */
  private renewClaimLeases(): Promise<void> {
    const { store, localClock, nodeId, logger } = this.deps;
    return runEvery(
      localClock,
      this.opts.claimLeaseMs / 3,
      this.leaseAbort.signal,
      async () => {
        if (!this.membership.isAlive()) return;
        await store.claimLeaseRenew({ owner: nodeId, leaseUntil: this.clock.now() + this.opts.claimLeaseMs });
      },
      { pauseFirst: true, onError: (err) => logger.warn({ err }, 'renewing claim leases failed') },
    );
  }

  /** Stops firing at once, resigns the lease and leaves the cluster so shards move without waiting. */
  async stop(): Promise<void> {
    this.leaseAbort.abort();
    await this.leaseLoop;
    await this.ownership.stop();
    await this.elector.stop();
    await this.membership.stop(true);
    await this.clock.stop();
  }

  async status(): Promise<ClusterStatus> {
    const { store } = this.deps;
    const [leader, nodes, shards] = await Promise.all([
      store.leaderGet(),
      store.nodeList({ now: this.clock.now() }),
      store.shardList(),
    ]);
    const perNode = new Map<string, number>();
    for (const s of shards) perNode.set(s.nodeId, (perNode.get(s.nodeId) ?? 0) + 1);
    return {
      nodeId: this.deps.nodeId,
      leader,
      nodes: nodes.map((n) => ({
        id: n.id,
        startedAt: n.startedAt,
        heartbeatAgeMs: n.ageMs,
        live: n.ageMs < this.opts.nodeTtlMs,
        shards: perNode.get(n.id) ?? 0,
        meta: n.meta,
      })),
      shardCount: this.deps.shardCount,
      unassignedShards: this.deps.shardCount - shards.length,
      clockSkewMs: this.clock.skewMs,
    };
  }
}
