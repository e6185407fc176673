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

export class TenantPolicies {
  private cache = new Map<string, { policy: TenantPolicy; loadedAtMs: number }>();

  constructor(
    private readonly load: (tenantId: string) => Promise<TenantRecord | null>,
    private readonly clock: Clock,
  ) {}

  /** The cached policy, or undefined when it must be loaded first. */
  peek(tenantId: string): TenantPolicy | undefined {
    const hit = this.cache.get(tenantId);
    return hit && this.clock.monotonicMs() - hit.loadedAtMs < TENANT_POLICY_CACHE_MS ? hit.policy : undefined;
  }

  async get(tenantId: string): Promise<TenantPolicy> {
    const cached = this.peek(tenantId);
    if (cached) return cached;
    const policy = tenantPolicyOf((await this.load(tenantId))?.settings);
    this.cache.set(tenantId, { policy, loadedAtMs: this.clock.monotonicMs() });
    return policy;
  }
}
