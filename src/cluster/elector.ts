/**
 * The elector: holds or seeks the leader lease, and while leader keeps the shard map balanced over
 * the live nodes.
 *
 *   follower ──lease free or expired──▶ leader (epoch + 1) ──extend every interval──▶ leader
 *       ▲                                   │
 *       └──── lease lost (not extended in time, or another node holds it) ◀─┘
 *
 * As leader, each pass reads the nodes (dead: heartbeat older than nodeTtlMs by the store clock)
 * and the shard map, computes balanceShards (minimal movement), and writes it when it changed.
 * The write is fenced by the lease: it applies only if this node still holds it at this epoch.
 *
 * Failover rescue: when a dead node holds shards, the leader first makes that node's claims
 * (events it left executing) due again, then moves its shards, so the new owners find them due
 * when they read their new shards, seconds before the claims' leases would end. The rescue is
 * fenced in the store by this lease and by the dead node's heartbeat (one it sent meanwhile
 * keeps its claims), and runs only once this leader has itself reached the store without a break
 * for a whole node TTL (Membership.reachableForMs): right after a store outage every heartbeat
 * is old though nobody died, and the store being up all that while means the silent node had its
 * chances to heartbeat. For the same reason a leader that reached the store for less than half a
 * TTL moves no shard away from a silent node (see liveNodes). A node whose own heartbeats fail
 * does not lead (mayLead). A rescue that cannot run yet stays pending for the next passes; the
 * lease-expiry rescuer is the backstop for whatever is left (a new leader does not know its
 * predecessor's).
 */
import { runEvery } from '../core/loop.ts';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { balanceShards } from '../core/shard.ts';
import type { LeaderLease, NodeRecord, Store } from '../store/store.ts';

/** Claims of dead nodes rescued per store call (a leader's pass makes as many calls as it needs). */
const DEAD_CLAIMS_RESCUE_BATCH_MAX = 1_000;

export interface ElectorOptions {
  intervalMs: number;
  leaseMs: number;
  nodeTtlMs: number;
  shardCount: number;
}

export interface ElectorDeps {
  store: Pick<
    Store,
    'leaderAttemptElect' | 'leaderResign' | 'nodeList' | 'shardList' | 'shardAssign' | 'eventRescueDead'
  >;
  /** Paces the passes. */
  clock: Clock;
  nodeId: string;
  logger: Logger;
  onMoved?: (moved: number, epoch: number) => void;
  /**
   * How long this node has reached the store without a break (Membership.reachableForMs). Without
   * it the elector rescues nothing, and a dead node's claims wait for their leases to end.
   */
  reachableForMs?: () => number;
  /**
   * Whether this node may act (Membership.isAlive): a node whose own heartbeats fail neither takes
   * nor extends the lease, so a node that can still heartbeat leads instead of it.
   */
  mayLead?: () => boolean;
  /**
   * The store-calibrated clock: the cluster time this node passes to the lease, node list and
   * shard map calls, and when rescued events are due (default: `clock`).
   */
  storeClock?: Pick<Clock, 'now'>;
}

export interface ElectorPass {
  leader: boolean;
  epoch: number | null;
  /** Shards whose owner changed in this pass. */
  moved: number;
}

/**
 * A silent node holding shards keeps them while this leader has just (re)connected to the store,
 * but not when its heartbeat is this old: a cluster started after a long stop moves them at once.
 */
export const DEAD_FOR_SURE_MS = 30_000;
/** Bound on eventRescueDead calls per pass, so a huge backlog of claims never holds up a shard move. */
export const DEAD_RESCUE_ROUNDS_PER_PASS = 5;
/** Bound on dead nodes waiting for their rescue. */
export const DEAD_RESCUE_PENDING_MAX = 1_000;

export class Elector {
  private lease: LeaderLease | null = null;
  private abort = new AbortController();
  private loop: Promise<void> | null = null;
  /** Dead nodes whose shards this leader moves or moved, and whose claims are not all rescued yet. */
  private readonly pendingRescue = new Set<string>();

  constructor(
    private readonly deps: ElectorDeps,
    private readonly opts: ElectorOptions,
  ) {}

  /** The cluster time this node passes to the store (Store's ClusterNow). */
  private now(): number {
    return (this.deps.storeClock ?? this.deps.clock).now();
  }

  get isLeader(): boolean {
    return this.lease !== null;
  }

  get epoch(): number | null {
    return this.lease?.epoch ?? null;
  }

  async runOnce(): Promise<ElectorPass> {
    const lease = await this.elect();
    if (!lease) return { leader: false, epoch: null, moved: 0 };
    const { store, nodeId, logger } = this.deps;
    const [nodes, shards] = await Promise.all([store.nodeList({ now: this.now() }), store.shardList()]);
    const current = new Map(shards.map((s) => [s.shard, s.nodeId]));
    const live = this.liveNodes(nodes, current);
    this.noteDeadOwners(nodes, current);
    // Before the map moves: the new owners read their new shards from the start, rescued rows included.
    await this.rescueDeadOwners(lease.epoch);
    const target = balanceShards(current, live, this.opts.shardCount);
    const moved = target.filter((n, shard) => n !== (current.get(shard) ?? null)).length;
    if (moved === 0) return { leader: true, epoch: lease.epoch, moved: 0 };
    const assignments = target.flatMap((n, shard) => (n === null ? [] : [{ shard, nodeId: n }]));
    const applied = await store.shardAssign({ leaderId: nodeId, epoch: lease.epoch, assignments, now: this.now() });
    if (!applied) {
      this.lease = null;
      return { leader: false, epoch: null, moved: 0 };
    }
    logger.info({ epoch: lease.epoch, moved, live }, 'shards reassigned');
    this.deps.onMoved?.(moved, lease.epoch);
    return { leader: true, epoch: lease.epoch, moved };
  }

  /** Takes or extends the lease; null when another node holds it, this node may not act, or the store cannot be reached. */
  private async elect(): Promise<LeaderLease | null> {
    const { store, nodeId, logger, mayLead } = this.deps;
    let lease: LeaderLease | null = null;
    try {
      if (!mayLead || mayLead())
        lease = await store.leaderAttemptElect({ nodeId, leaseMs: this.opts.leaseMs, now: this.now() });
    } catch (err) {
      logger.warn({ err }, 'leader election failed');
    }
    if (lease && (!this.lease || this.lease.epoch !== lease.epoch))
      logger.info({ epoch: lease.epoch }, 'became leader');
    if (!lease && this.lease) logger.warn({ epoch: this.lease.epoch }, 'lost the leader lease');
    if (!lease) this.pendingRescue.clear();
    this.lease = lease;
    return lease;
  }

  /** Whether this node has reached the store without a break for `ms` (always, without reachableForMs). */
  private reached(ms: number): boolean {
    const { reachableForMs } = this.deps;
    return !reachableForMs || reachableForMs() >= ms;
  }

  /**
   * The nodes to spread the shards over: those heart-beating and, while this leader has reached
   * the store for less than half a TTL, the silent ones that hold shards (for DEAD_FOR_SURE_MS at
   * most). Right after a store outage every heartbeat is old though nobody died: the others send
   * theirs within an interval, and their shards stay put instead of moving away and back.
   */
  private liveNodes(nodes: NodeRecord[], current: Map<number, string>): string[] {
    const judging = this.reached(this.opts.nodeTtlMs / 2);
    const holders = new Set(current.values());
    const keep = (n: NodeRecord) => !judging && holders.has(n.id) && n.ageMs < DEAD_FOR_SURE_MS;
    return nodes.filter((n) => n.ageMs < this.opts.nodeTtlMs || keep(n)).map((n) => n.id);
  }

  /** Dead nodes holding shards join the pending rescue; a pending node alive again (or gone) leaves it. */
  private noteDeadOwners(nodes: NodeRecord[], current: Map<number, string>): void {
    const ageMs = new Map(nodes.map((n) => [n.id, n.ageMs]));
    const isDead = (id: string) => (ageMs.get(id) ?? -1) >= this.opts.nodeTtlMs;
    for (const id of this.pendingRescue) if (!isDead(id)) this.pendingRescue.delete(id);
    for (const id of new Set(current.values())) {
      if (isDead(id) && this.pendingRescue.size < DEAD_RESCUE_PENDING_MAX) this.pendingRescue.add(id);
    }
  }

  /** Rescues the pending dead nodes' claims, in bounded rounds; keeps them pending when it cannot yet. */
  private async rescueDeadOwners(epoch: number): Promise<void> {
    const { store, nodeId, logger } = this.deps;
    if (this.pendingRescue.size === 0 || !this.deps.reachableForMs || !this.reached(this.opts.nodeTtlMs)) return;
    const owners = [...this.pendingRescue];
    try {
      for (let round = 0; round < DEAD_RESCUE_ROUNDS_PER_PASS; round++) {
        const refs = await store.eventRescueDead({
          leaderId: nodeId,
          epoch,
          owners,
          nodeTtlMs: this.opts.nodeTtlMs,
          now: this.now(),
          limit: DEAD_CLAIMS_RESCUE_BATCH_MAX,
        });
        if (refs === null) return;
        if (refs.length > 0) logger.warn({ count: refs.length, owners }, 'rescued events claimed by dead nodes');
        if (refs.length < DEAD_CLAIMS_RESCUE_BATCH_MAX) {
          for (const id of owners) this.pendingRescue.delete(id);
          return;
        }
      }
    } catch (err) {
      logger.warn({ err, owners }, 'rescuing the claims of dead nodes failed; trying again next pass');
    }
  }

  start(): void {
    this.abort = new AbortController();
    this.loop = runEvery(this.deps.clock, this.opts.intervalMs, this.abort.signal, () =>
      this.runOnce().catch((err) => this.deps.logger.error({ err }, 'elector pass failed')),
    );
  }

  /** Stops, and gives the lease up at once so another node leads without waiting for expiry. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    if (this.lease)
      await this.deps.store
        .leaderResign({ nodeId: this.deps.nodeId, epoch: this.lease.epoch, now: this.now() })
        .catch(() => {});
    this.lease = null;
  }
}
