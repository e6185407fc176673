/** GET /v1/cluster: the cluster as this node sees it, or this one node owning every shard. */
import type { ClusterView } from '../api/schemas/cluster.ts';
import type { Cluster } from '../cluster/cluster.ts';
import type { Clock } from '../core/clock.ts';
import type { Store } from '../store/store.ts';

/** Shards listed in GET /v1/cluster's lag, the latest first. */
const CLUSTER_LAG_SHARDS_MAX = 64;

export interface ClusterViewDeps {
  store: Store;
  clock: Clock;
  /** Null on a single-node store. */
  cluster: Cluster | null;
  nodeId: string;
  shardCount: number;
  /** When this node started (wall clock, ms). */
  startedAt: number;
}

export async function clusterView(deps: ClusterViewDeps): Promise<ClusterView> {
  const { store, clock, cluster, nodeId } = deps;
  const now = clock.now();
  const lagRows = await store.shardLag({ now, limit: CLUSTER_LAG_SHARDS_MAX });
  const iso = (ms: number) => new Date(ms).toISOString();
  if (!cluster) {
    return {
      mode: 'single',
      nodeId,
      leader: null,
      shardCount: deps.shardCount,
      unassignedShards: 0,
      clockSkewMs: 0,
      nodes: [{ id: nodeId, live: true, heartbeatAgeMs: 0, shards: deps.shardCount, startedAt: iso(deps.startedAt) }],
      lag: lagRows.map((l) => ({ shard: l.shard, nodeId, dueEvents: l.dueEvents, lagMs: now - l.oldestDueAt })),
    };
  }
  const [status, shardMap] = await Promise.all([cluster.status(), store.shardList()]);
  const ownerOf = new Map(shardMap.map((a) => [a.shard, a.nodeId]));
  return {
    mode: 'cluster',
    nodeId,
    leader: status.leader
      ? { nodeId: status.leader.nodeId, epoch: status.leader.epoch, expiresAt: iso(status.leader.expiresAt) }
      : null,
    shardCount: status.shardCount,
    unassignedShards: status.unassignedShards,
    clockSkewMs: status.clockSkewMs,
    nodes: status.nodes.map((n) => ({
      id: n.id,
      live: n.live,
      heartbeatAgeMs: n.heartbeatAgeMs,
      shards: n.shards,
      startedAt: iso(n.startedAt),
    })),
    lag: lagRows.map((l) => ({
      shard: l.shard,
      nodeId: ownerOf.get(l.shard) ?? null,
      dueEvents: l.dueEvents,
      lagMs: now - l.oldestDueAt,
    })),
  };
}
