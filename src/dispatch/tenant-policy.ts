/**
 * A tenant's delivery policy, from its settings, cached briefly: `missedAfter` — an event whose
 * first fire comes more than this late (its shard had no owner, the node was down) is archived
 * instead of delivered, for tenants to whom a very late delivery is worse than none.
 */
import type { Clock } from '../core/clock.ts';
import { parseDurationMs } from '../core/duration.ts';
import type { TenantRecord } from '../store/store.ts';

export interface TenantPolicy {
  missedAfterMs: number | null;
}

export const TENANT_POLICY_CACHE_MS = 5_000;
const NONE: TenantPolicy = { missedAfterMs: null };

export function tenantPolicyOf(settings: TenantRecord['settings'] | undefined): TenantPolicy {
  const raw = settings?.missedAfter;
  const ms = raw === undefined || raw === null ? null : parseDurationMs(raw);
  return ms === null ? NONE : { missedAfterMs: ms };
}

/** Bound on the tenants whose policy is cached. */
export const TENANT_POLICIES_CACHED_MAX = 10_000;

type Entry = { policy: TenantPolicy | undefined; loading: Promise<TenantPolicy> | null; loadedAtMs: number };

/**
 * The policies of the tenants whose events this node delivers. One store read per tenant at a
 * time however many events ask (a flood's first claim asks hundreds of times at once), and a
 * policy past its cache time is served while it is read again in the background: a tenant's
 * events never wait for its policy once it has been read.
 */
export class TenantPolicies {
  private cache = new Map<string, Entry>();

  constructor(
    private readonly load: (tenantId: string) => Promise<TenantRecord | null>,
    private readonly clock: Clock,
  ) {}

  /**
   * The policy as last read (starting a new read in the background when it is older than
   * TENANT_POLICY_CACHE_MS), or undefined when it was never read and must be loaded first.
   */
  peek(tenantId: string): TenantPolicy | undefined {
    const entry = this.cache.get(tenantId);
    if (!entry) return undefined;
    if (!entry.loading && this.clock.monotonicMs() - entry.loadedAtMs >= TENANT_POLICY_CACHE_MS) {
      this.refresh(tenantId, entry).catch(() => {}); // the last policy read stays until a read succeeds
    }
    return entry.policy;
  }

  async get(tenantId: string): Promise<TenantPolicy> {
    const known = this.peek(tenantId);
    if (known) return known;
    let entry = this.cache.get(tenantId);
    if (!entry) {
      if (this.cache.size >= TENANT_POLICIES_CACHED_MAX) this.cache.clear();
      entry = { policy: undefined, loading: null, loadedAtMs: 0 };
      this.cache.set(tenantId, entry);
    }
    return entry.loading ?? this.refresh(tenantId, entry);
  }

  private refresh(tenantId: string, entry: Entry): Promise<TenantPolicy> {
    const loading = this.load(tenantId).then(
      (record) => {
        entry.policy = tenantPolicyOf(record?.settings);
        entry.loadedAtMs = this.clock.monotonicMs();
        entry.loading = null;
        return entry.policy;
      },
      (err: unknown) => {
        entry.loading = null;
        if (entry.policy === undefined && this.cache.get(tenantId) === entry) this.cache.delete(tenantId);
        throw err;
      },
    );
    entry.loading = loading;
    return loading;
  }
}
