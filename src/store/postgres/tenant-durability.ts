/**
 * Which tenants chose `durability: "relaxed"` (their settings), cached briefly: every insert batch
 * asks, and settings change rarely. A change takes effect within TENANT_SETTINGS_TTL_MS.
 */
import { performance } from 'node:perf_hooks';
import type { Queryable } from './db.ts';
import { run } from './db.ts';

export const TENANT_SETTINGS_TTL_MS = 5_000;
/** Bound on the cache; past it the cache starts over (a burst of many tenants costs one re-read each). */
export const TENANT_SETTINGS_CACHE_MAX = 10_000;

interface Entry {
  relaxed: boolean;
  /** performance.now() after which the entry is stale. */
  staleAtMs: number;
}

export class TenantDurability {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly ttlMs: number = TENANT_SETTINGS_TTL_MS) {}

  /** True when every one of `tenantIds` is relaxed (an unknown tenant counts as strict). */
  async allRelaxed(db: Queryable, tenantIds: Iterable<string>): Promise<boolean> {
    const now = performance.now();
    const unknown: string[] = [];
    for (const id of new Set(tenantIds)) {
      const entry = this.entries.get(id);
      if (entry === undefined || entry.staleAtMs <= now) unknown.push(id);
      else if (!entry.relaxed) return false;
    }
    if (unknown.length === 0) return true;
    const rows = (await run<{ id: string; durability: string | null }>(db, 'tenantDurability', [unknown])).rows;
    if (this.entries.size + rows.length > TENANT_SETTINGS_CACHE_MAX) this.entries.clear();
    const relaxed = new Set<string>();
    for (const row of rows) {
      const isRelaxed = row.durability === 'relaxed';
      this.entries.set(row.id, { relaxed: isRelaxed, staleAtMs: now + this.ttlMs });
      if (isRelaxed) relaxed.add(row.id);
    }
    return unknown.every((id) => relaxed.has(id));
  }

  /** Forgets what is cached (after this process changed a tenant's settings). */
  clear(): void {
    this.entries.clear();
  }
}
