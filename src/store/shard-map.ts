/** Checks shared by every backend on the inputs of the cluster methods, so all refuse the same. */

/** Bound on a shard map: far above any sensible shard count, below anything that hurts a write. */
export const SHARD_MAP_SIZE_MAX = 65_536;
/** Bound on a lease: a leader that stops renewing loses it within a day at the latest. */
export const LEASE_MS_MAX = 86_400_000;

/** Throws RangeError on a non-integer or negative shard, a repeated shard, an empty node id, or a map too big. */
export function checkShardAssignments(assignments: { shard: number; nodeId: string }[]): void {
  if (assignments.length > SHARD_MAP_SIZE_MAX) {
    throw new RangeError(`shardAssign: at most ${SHARD_MAP_SIZE_MAX} assignments, got ${assignments.length}`);
  }
  const seen = new Set<number>();
  for (const a of assignments) {
    if (!Number.isInteger(a.shard) || a.shard < 0)
      throw new RangeError(`shardAssign: shard must be an integer ≥ 0, got ${a.shard}`);
    if (seen.has(a.shard)) throw new RangeError(`shardAssign: shard ${a.shard} assigned twice`);
    if (typeof a.nodeId !== 'string' || a.nodeId === '')
      throw new RangeError(`shardAssign: shard ${a.shard} has no node id`);
    seen.add(a.shard);
  }
}

/** Throws RangeError unless 1 ≤ leaseMs ≤ LEASE_MS_MAX (an integer). */
export function checkLeaseMs(leaseMs: number): void {
  if (!Number.isInteger(leaseMs) || leaseMs < 1 || leaseMs > LEASE_MS_MAX) {
    throw new RangeError(`leaderAttemptElect: leaseMs must be an integer from 1 to ${LEASE_MS_MAX}, got ${leaseMs}`);
  }
}
