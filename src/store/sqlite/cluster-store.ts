/**
 * The cluster methods of the SQLite backend (see ../parts/cluster.ts), on the store's connection
 * (database.ts). One process owns the file, so the cluster time is the caller's `now` and the
 * store's clock (timeNow) is this process's. A claim lease's renewal and the rescue of dead
 * nodes' claims commit relaxed, as the scheduler's other bookkeeping does.
 */
import type * as S from '../store.ts';
import { checkLimit } from '../core/bounds.ts';
import { checkLeaseMs, checkShardAssignments } from '../shard-map.ts';
import { leaderLeaseFromRow, shardAssignmentFromRow } from '../core/rows.ts';
import * as writes from './event-writes.ts';
import { nodeFromRow } from './rows.ts';
import { SqlitePart } from './database.ts';
import type { ClusterStore } from '../parts/cluster.ts';

export class SqliteCluster extends SqlitePart implements ClusterStore {
  async leaderAttemptElect(params: { nodeId: string; leaseMs: number } & S.ClusterNow): Promise<S.LeaderLease | null> {
    checkLeaseMs(params.leaseMs);
    const { now } = params;
    const row = this.q.leaderElect.get({ nodeId: params.nodeId, now, expiresAt: now + params.leaseMs });
    return row ? leaderLeaseFromRow(row) : null;
  }

  async leaderGet(): Promise<S.LeaderLease | null> {
    const row = this.q.leaderGet.get();
    return row ? leaderLeaseFromRow(row) : null;
  }

  async leaderResign(params: { nodeId: string; epoch: number } & S.ClusterNow): Promise<void> {
    this.q.leaderResign.run({ nodeId: params.nodeId, epoch: params.epoch, now: params.now });
  }

  async nodeHeartbeat(
    params: { nodeId: string; meta: Record<string, unknown> } & S.ClusterNow,
  ): Promise<{ nowMs: number }> {
    const nowMs = params.now;
    this.q.nodeUpsert.run({ id: params.nodeId, now: nowMs, meta: JSON.stringify(params.meta) });
    return { nowMs };
  }

  async nodeList(params: S.ClusterNow): Promise<S.NodeRecord[]> {
    return this.q.nodeList.all().map((row) => nodeFromRow(row, params.now));
  }

  async nodeDelete(params: { nodeId: string }): Promise<void> {
    this.q.nodeDelete.run({ id: params.nodeId });
  }

  async claimLeaseRenew(params: { owner: string; leaseUntil: number }): Promise<void> {
    this.writeRelaxed(() => {
      this.q.claimLeasePrune.run(params);
      this.q.claimLeaseRenew.run(params);
    });
  }

  async shardAssign(
    params: {
      leaderId: string;
      epoch: number;
      assignments: { shard: number; nodeId: string }[];
    } & S.ClusterNow,
  ): Promise<boolean> {
    checkShardAssignments(params.assignments);
    return this.write(() => {
      if (!this.q.leaderCheck.get({ leaderId: params.leaderId, epoch: params.epoch, now: params.now })) return false;
      this.q.shardClear.run();
      for (const a of params.assignments) this.q.shardInsert.run(a.shard, a.nodeId, params.epoch);
      return true;
    });
  }

  async shardList(): Promise<S.ShardAssignment[]> {
    return this.q.shardList.all().map(shardAssignmentFromRow);
  }

  async shardCountRecord(params: { shardCount: number }): Promise<number> {
    return this.write(() => {
      this.q.shardCountInsert.run(String(params.shardCount));
      return Number(this.q.shardCountGet.get()!.value);
    });
  }

  async shardLag(params: {
    now: number;
    limit: number;
  }): Promise<{ shard: number; dueEvents: number; oldestDueAt: number }[]> {
    checkLimit(params.limit, 'shardLag');
    return this.q.shardLag
      .all({ now: params.now, limit: params.limit })
      .map((r) => ({ shard: r.shard, dueEvents: r.due_events, oldestDueAt: r.oldest_due_at }));
  }

  async eventRescueDead(params: S.EventRescueDeadParams): Promise<S.DueRef[] | null> {
    checkLimit(params.limit, 'eventRescueDead');
    return this.writeRelaxed(() => {
      const { leaderId, epoch, now } = params;
      if (!this.q.leaderCheck.get({ leaderId, epoch, now })) return null;
      return writes.rescueDead(this.q, params);
    });
  }

  async timeNow(): Promise<number> {
    return Date.now();
  }
}
