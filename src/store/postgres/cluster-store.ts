/**
 * The cluster methods of the PostgreSQL backend (see ../parts/cluster.ts), on the store's pools
 * (database.ts). Leases and heartbeats are timed by the database clock, which every node shares.
 */
import { checkLeaseMs, checkShardAssignments } from '../shard-map.ts';
import type * as S from '../store.ts';
import { checkLimit } from '../core/bounds.ts';
import {
  leaderLeaseFromRow,
  shardAssignmentFromRow,
  type LeaderLeaseRow,
  type ShardAssignmentRow,
} from '../core/rows.ts';
import { inTransaction, run } from './db.ts';
import * as writes from './event-writes.ts';
import { TX } from './queries.ts';
import { nodeFromRow, type NodeRow } from './rows.ts';
import { PostgresPart } from './database.ts';
import type { ClusterStore } from '../parts/cluster.ts';

export class PostgresCluster extends PostgresPart implements ClusterStore {
  async leaderAttemptElect(params: { nodeId: string; leaseMs: number } & S.ClusterNow): Promise<S.LeaderLease | null> {
    checkLeaseMs(params.leaseMs);
    const row = (await run<LeaderLeaseRow>(this.pool, 'leaderElect', [params.nodeId, params.leaseMs])).rows[0];
    return row ? leaderLeaseFromRow(row) : null;
  }

  async leaderGet(): Promise<S.LeaderLease | null> {
    const row = (await run<LeaderLeaseRow>(this.pool, 'leaderGet')).rows[0];
    return row ? leaderLeaseFromRow(row) : null;
  }

  async leaderResign(params: { nodeId: string; epoch: number } & S.ClusterNow): Promise<void> {
    await run(this.pool, 'leaderResign', [params.nodeId, params.epoch]);
  }

  async nodeHeartbeat(
    params: { nodeId: string; meta: Record<string, unknown> } & S.ClusterNow,
  ): Promise<{ nowMs: number }> {
    const row = (
      await run<{ heartbeat_at: number }>(this.pool, 'nodeHeartbeat', [params.nodeId, JSON.stringify(params.meta)])
    ).rows[0];
    return { nowMs: row.heartbeat_at };
  }

  async nodeList(_params: S.ClusterNow): Promise<S.NodeRecord[]> {
    return (await run<NodeRow>(this.pool, 'nodeList')).rows.map((row) => nodeFromRow(row, row.now_ms));
  }

  async nodeDelete(params: { nodeId: string }): Promise<void> {
    await run(this.pool, 'nodeDelete', [params.nodeId]);
  }

  async claimLeaseRenew(params: { owner: string; leaseUntil: number }): Promise<void> {
    await run(this.pool, 'claimLeaseRenew', [params.owner, params.leaseUntil]);
  }

  /**
   * In one transaction: share-lock the lease row if (leaderId, epoch) holds it unexpired (so no
   * election can commit meanwhile), then replace the map.
   */
  async shardAssign(
    params: {
      leaderId: string;
      epoch: number;
      assignments: { shard: number; nodeId: string }[];
    } & S.ClusterNow,
  ): Promise<boolean> {
    checkShardAssignments(params.assignments);
    return inTransaction(this.pool, TX.begin, async (client) => {
      if ((await run(client, 'leaderCheckForShare', [params.leaderId, params.epoch])).rowCount !== 1) return false;
      await run(client, 'shardClear');
      await run(client, 'shardInsertMany', [
        params.assignments.map((a) => a.shard),
        params.assignments.map((a) => a.nodeId),
        params.epoch,
      ]);
      return true;
    });
  }

  async shardList(): Promise<S.ShardAssignment[]> {
    return (await run<ShardAssignmentRow>(this.pool, 'shardList')).rows.map(shardAssignmentFromRow);
  }

  async shardCountRecord(params: { shardCount: number }): Promise<number> {
    await run(this.pool, 'shardCountInsert', [String(params.shardCount)]);
    return Number((await run<{ value: string }>(this.pool, 'shardCountGet')).rows[0].value);
  }

  async shardLag(params: {
    now: number;
    limit: number;
  }): Promise<{ shard: number; dueEvents: number; oldestDueAt: number }[]> {
    checkLimit(params.limit, 'shardLag');
    const res = await run<{ shard: number; due_events: number; oldest_due_at: string | number }>(
      this.pool,
      'shardLag',
      [params.now, params.limit],
    );
    return res.rows.map((r) => ({ shard: r.shard, dueEvents: r.due_events, oldestDueAt: Number(r.oldest_due_at) }));
  }

  async eventRescueDead(params: S.EventRescueDeadParams): Promise<S.DueRef[] | null> {
    checkLimit(params.limit, 'eventRescueDead');
    if (params.owners.length === 0) return [];
    return writes.rescueDead(this.pool, params);
  }

  async timeNow(): Promise<number> {
    return (await run<{ now_ms: number }>(this.pool, 'timeNow')).rows[0].now_ms;
  }
}
