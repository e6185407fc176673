/** Shard math: every event lives in shard hash(tenant, group or id) mod S, so a group never spans shards. */

export const SHARD_COUNT_DEFAULT = 256;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** Continues an FNV-1a hash over the UTF-16 code units of `text`. */
function fnvUpdate(hash: number, text: string): number {
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, FNV_PRIME);
  }
  return hash;
}

/** FNV-1a, 32 bits, over UTF-16 code units: fast, stable across processes and versions. */
export function fnv1a32(text: string): number {
  return fnvUpdate(FNV_OFFSET, text) >>> 0;
}

/**
 * fnv1a32(`${tenantId}\u0000${groupOrId}`) % shardCount, hashed part by part: the joined string
 * is never built (it was 2 % of a batch insert's CPU, flattened once per event).
 */
export function shardOf(tenantId: string, groupOrId: string, shardCount: number = SHARD_COUNT_DEFAULT): number {
  const hash = fnvUpdate(Math.imul(fnvUpdate(FNV_OFFSET, tenantId), FNV_PRIME), groupOrId);
  return (hash >>> 0) % shardCount;
}

/**
 * Spreads `shardCount` shards over the live nodes evenly (no node more than one shard above
 * another) while moving as few shards as possible:
 *   1. every shard stays with its owner while that owner is live and under its quota;
 *   2. the rest (shards of dead nodes, never-assigned shards, a node's excess) go to the live
 *      nodes furthest below their quota.
 * Quotas: floor(S/N) each, and one more for the first S mod N nodes in id order, preferring nodes
 * that already hold more (so a balanced map stays unchanged). Pure and deterministic.
 * Returns an array indexed by shard: the node id, or null when no node is live.
 */
export function balanceShards(
  current: ReadonlyMap<number, string>,
  liveNodeIds: readonly string[],
  shardCount: number,
): (string | null)[] {
  const nodes = [...new Set(liveNodeIds)].sort();
  if (nodes.length === 0) return new Array<string | null>(shardCount).fill(null);
  const held = new Map<string, number[]>(nodes.map((n) => [n, []]));
  for (let shard = 0; shard < shardCount; shard++) {
    const owner = current.get(shard);
    if (owner !== undefined) held.get(owner)?.push(shard);
  }
  const base = Math.floor(shardCount / nodes.length);
  let extra = shardCount % nodes.length;
  // Nodes already holding more than the base get the extra slots first: fewer moves.
  const quota = new Map<string, number>();
  for (const n of [...nodes].sort((a, b) => held.get(b)!.length - held.get(a)!.length || (a < b ? -1 : 1))) {
    quota.set(n, base + (extra > 0 ? 1 : 0));
    if (extra > 0) extra--;
  }
  const out = new Array<string | null>(shardCount).fill(null);
  const free: number[] = [];
  const count = new Map<string, number>(nodes.map((n) => [n, 0]));
  for (let shard = 0; shard < shardCount; shard++) {
    const owner = current.get(shard);
    if (owner !== undefined && held.has(owner) && count.get(owner)! < quota.get(owner)!) {
      out[shard] = owner;
      count.set(owner, count.get(owner)! + 1);
    } else {
      free.push(shard);
    }
  }
  let i = 0;
  for (const n of nodes) {
    while (count.get(n)! < quota.get(n)!) {
      out[free[i++]] = n;
      count.set(n, count.get(n)! + 1);
    }
  }
  return out;
}

/** Whether `shard` is among `shards` (null: every shard, a single node). */
export function owns(shards: number[] | null, shard: number): boolean {
  return shards === null || shards.includes(shard);
}
