/**
 * The Store's part for the cluster (docs/cluster.md): the leader lease, the nodes' heartbeats
 * and their claim leases, the shard map and its count, the leader's rescue of dead nodes' claims, the store's clock, and
 * the wake-ups between nodes (Store.dueWakeups, where the backend has them). Implemented by each
 * backend's cluster-store.ts.
 */

import type { DueRef } from './events.ts';

/**
 * Wake-ups between the nodes sharing a store. A node's read-ahead reads rows due within its
 * look-ahead once, past a cursor; an event written by another node and due before that cursor
 * would otherwise be found only by the overdue sweep, a second or more late. The writer announces
 * such events; every node hears them and takes those of its shards into its timer. Best effort:
 * what is lost (a node reconnecting) is still found by the sweep.
 */
export interface DueWakeups {
  /** Announces fireable events due soon that this node wrote (bounded by the caller's batch). */
  announce(refs: DueRef[]): Promise<void>;
  /**
   * Calls `listener` with every announced batch (this node's own included) until closed;
   * resolves once listening. Reconnects by itself after a lost connection, telling `onError`.
   */
  subscribe(listener: (refs: DueRef[]) => void, onError: (err: Error) => void): Promise<{ close(): Promise<void> }>;
}

export interface EventRescueDeadParams {
  /** The leader and its epoch: the rescue applies only while they hold the unexpired lease. */
  leaderId: string;
  epoch: number;
  /** Nodes the leader found dead (their heartbeat stopped), whose shards it is moving. */
  owners: string[];
  /**
   * Only owners whose node row's heartbeat is at least this old by the store's clock, read in
   * the same transaction: a node that heart-beat meanwhile keeps its claims, and so does an
   * owner without a node row (a node that left gracefully finishes its own deliveries).
   */
  nodeTtlMs: number;
  /**
   * Rescued events are due at this instant; on SQLite it is also the cluster time the lease and
   * the heartbeats are judged at (see ClusterNow).
   */
  now: number;
  limit: number;
}

/** A node of the cluster as its heartbeats show it. Times are the store's clock. */
export interface NodeRecord {
  id: string;
  startedAt: number;
  heartbeatAt: number;
  /** Milliseconds since its last heartbeat, by the store's clock. */
  ageMs: number;
  meta: Record<string, unknown>;
}

/**
 * The cluster methods' time, River style: the caller passes its clock's time (a node passes its
 * store-calibrated clock's, a test its simulated clock's). SQLite decides lease expiry and
 * heartbeat ages by it. PostgreSQL decides them by its own database clock, which every node of a
 * cluster shares, and ignores it: a node whose clock went wrong cannot take or keep a lease there.
 */
export interface ClusterNow {
  now: number;
}

/** The leader lease: one row. `epoch` grows by one each time the lease changes hands. */
export interface LeaderLease {
  nodeId: string;
  epoch: number;
  /** Store-clock ms. */
  expiresAt: number;
}

export interface ShardAssignment {
  shard: number;
  nodeId: string;
  /** The leader epoch that wrote it. */
  epoch: number;
}

/** The cluster methods of Store. */
export interface ClusterStore {
  /**
   * Takes the leader lease when it is free or expired (epoch + 1), or extends it (same epoch)
   * when `nodeId` holds it; null when another node holds an unexpired lease. Cluster time (`now`).
   */
  leaderAttemptElect(params: { nodeId: string; leaseMs: number } & ClusterNow): Promise<LeaderLease | null>;
  leaderGet(): Promise<LeaderLease | null>;
  /** Gives the lease up at once (graceful stop), only if `nodeId` holds it at `epoch`. */
  leaderResign(params: { nodeId: string; epoch: number } & ClusterNow): Promise<void>;
  /** Registers the node or refreshes its heartbeat; returns the cluster time it recorded. */
  nodeHeartbeat(params: { nodeId: string; meta: Record<string, unknown> } & ClusterNow): Promise<{ nowMs: number }>;
  /** The registered nodes, each with its heartbeat's age at the cluster time (`now`). */
  nodeList(params: ClusterNow): Promise<NodeRecord[]>;
  nodeDelete(params: { nodeId: string }): Promise<void>;
  /**
   * Extends `owner`'s claim lease to `leaseUntil` (never shortens it). An executing event is
   * rescued only when its own lease (set by its claim) and its owner's claim lease have both
   * ended, so this one write keeps every claim of the owner alive however many are in flight.
   * A live node calls it periodically, so only a dead node's claims expire and are rescued.
   */
  claimLeaseRenew(params: { owner: string; leaseUntil: number }): Promise<void>;
  /**
   * Replaces the whole shard map, only if (`leaderId`, `epoch`) is the current, unexpired leader
   * lease (checked in the same transaction, at the cluster time). Returns whether it applied.
   */
  shardAssign(
    params: {
      leaderId: string;
      epoch: number;
      assignments: { shard: number; nodeId: string }[];
    } & ClusterNow,
  ): Promise<boolean>;
  shardList(): Promise<ShardAssignment[]>;
  /**
   * The shard count this store's events are placed with: `shardCount` at the first call (stored
   * then), the stored one ever after. A node refuses to start with another count (an event of a
   * shard past it would never fire).
   */
  shardCountRecord(params: { shardCount: number }): Promise<number>;
  /**
   * Per shard with fireable events due at or before `now`: how many, and the oldest due time.
   * Shards with nothing due are left out; at most `limit` shards, the most late first.
   */
  shardLag(params: {
    now: number;
    limit: number;
  }): Promise<{ shard: number; dueEvents: number; oldestDueAt: number }[]>;
  /**
   * Failover: makes the executing events of dead owners due again (`awaiting_retry`, due `now`,
   * a transition with reason `owner dead`), whatever their leases, so that they fire again as
   * soon as their shards move instead of when the leases end. Fenced twice, in one transaction:
   * by the leader lease (leaderId at epoch, unexpired) and by each owner's heartbeat (nodeTtlMs).
   * An outcome the dead owner records later does not apply (the version moved on). Returns the
   * refs it changed, oldest lease first, or null when leaderId does not hold the lease at epoch.
   */
  eventRescueDead(params: EventRescueDeadParams): Promise<DueRef[] | null>;
  /** The store's clock (PostgreSQL's now()); lease and due-time decisions of a cluster use it. */
  timeNow(): Promise<number>;
}
