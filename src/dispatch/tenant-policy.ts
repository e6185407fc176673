/**
 * A tenant's delivery policy, from its settings, cached briefly: `missedAfter` — an event whose
 * first fire comes more than this late (its shard had no owner, the node was down) is archived
 * instead of delivered, for tenants to whom a very late delivery is worse than none.
 */
import type { Clock } from '../core/clock.ts';
import { TtlCache } from '../core/ttl-cache.ts';
import { missedAfterOf } from '../core/tenant-settings.ts';
import type { TenantRecord } from '../store/store.ts';

export interface TenantPolicy {
  missedAfterMs: number | null;
}

export const TENANT_POLICY_CACHE_MS = 5_000;
const NONE: TenantPolicy = { missedAfterMs: null };

export function tenantPolicyOf(settings: TenantRecord['settings'] | undefined): TenantPolicy {
  const ms = missedAfterOf(settings);
  return ms === null ? NONE : { missedAfterMs: ms };
}

/** Bound on the tenants whose policy is cached. */
export const TENANT_POLICIES_CACHED_MAX = 10_000;

/**
 * The policies of the tenants whose events this node delivers. One store read per tenant at a
 * time however many events ask (a flood's first claim asks hundreds of times at once), and a
 * policy past its cache time is served while it is read again in the background: a tenant's
 * events never wait for its policy once it has been read.
 */
export class TenantPolicies {
  private readonly cache: TtlCache<string, TenantPolicy>;

  constructor(
    private readonly load: (tenantId: string) => Promise<TenantRecord | null>,
    clock: Clock,
  ) {
    this.cache = new TtlCache({
      ttlMs: TENANT_POLICY_CACHE_MS,
      entriesMax: TENANT_POLICIES_CACHED_MAX,
      nowMs: () => clock.monotonicMs(),
    });
  }

  /**
   * The policy as last read (starting a new read in the background when it is older than
   * TENANT_POLICY_CACHE_MS: the last policy read stays until a read succeeds), or undefined when
   * it was never read and must be loaded first.
   */
  peek(tenantId: string): TenantPolicy | undefined {
    return this.cache.peekRefreshing(tenantId, () => this.read(tenantId), { readAbsent: false });
  }

  async get(tenantId: string): Promise<TenantPolicy> {
    return this.peek(tenantId) ?? this.cache.refresh(tenantId, () => this.read(tenantId));
  }

  private async read(tenantId: string): Promise<TenantPolicy> {
    return tenantPolicyOf((await this.load(tenantId))?.settings);
  }
}
