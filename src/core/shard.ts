/** Shard math: every event lives in shard hash(tenant, group or id) mod S, so a group never spans shards. */

export const SHARD_COUNT_DEFAULT = 256;

/** FNV-1a, 32 bits, over UTF-16 code units: fast, stable across processes and versions. */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

export function shardOf(tenantId: string, groupOrId: string, shardCount: number = SHARD_COUNT_DEFAULT): number {
  return fnv1a32(`${tenantId}\u0000${groupOrId}`) % shardCount;
}
