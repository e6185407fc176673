/**
 * The tenant limits a schedule's occurrences count against, as API creates do: each occurrence
 * made is a pending event (pendingEventsMax, checked when it is made), and each that fires is one
 * scheduling request (scheduleRequestsPerSecond, taken when it fires: as if the occurrence were
 * created at its own time, so a schedule made ahead is not charged a horizon's worth at once). An
 * occurrence a limit refuses is counted missed, with the limit as the reason.
 */
import { BelfryError } from '../core/errors.ts';
import type { TenantLimits } from '../core/tenant-limits.ts';

/** What occurrences need of the tenants' quotas (api/tenant-quotas.ts TenantQuotas: the API's and its sources'). */
export interface TenantQuotaPort {
  limits(tenantId: string): Promise<TenantLimits>;
  limitsNow(tenantId: string): TenantLimits | null;
  /** Throws a BelfryError when `adding` more pending events would take the tenant past `max`. */
  checkPending(tenantId: string, adding: number, max: number): Promise<void>;
  pendingAdded(tenantId: string, n: number): void;
  takeScheduleRequestsUpTo(tenantId: string, perSecond: number, want: number): { granted: number; waitMs: number };
}

export interface OccurrenceLimits {
  /** Null when `n` more occurrences of the tenant may be made pending now; otherwise why not. */
  admitMade(tenantId: string, n: number): Promise<string | null>;
  /** Tells what was made (the tenant's pending estimate). */
  made(tenantId: string, n: number): void;
  /**
   * Null when one occurrence of the tenant may fire now; otherwise why not. Synchronous (it is
   * asked on the claim path): the tenant's limits as last read (TenantQuotas.limitsNow); a tenant
   * whose limits were never read is admitted meanwhile.
   */
  admitFire(tenantId: string): string | null;
}

export function occurrenceLimits(quotas: TenantQuotaPort): OccurrenceLimits {
  return {
    async admitMade(tenantId, n) {
      if (n <= 0) return null;
      const limits = await quotas.limits(tenantId);
      try {
        await quotas.checkPending(tenantId, n, limits.pendingEventsMax);
        return null;
      } catch (err) {
        if (!(err instanceof BelfryError)) throw err;
        return `refused by the tenant's pendingEventsMax (${limits.pendingEventsMax}): ${err.message}`;
      }
    },
    made(tenantId, n) {
      quotas.pendingAdded(tenantId, n);
    },
    admitFire(tenantId) {
      const limits = quotas.limitsNow(tenantId);
      if (limits === null) return null;
      const { granted } = quotas.takeScheduleRequestsUpTo(tenantId, limits.scheduleRequestsPerSecond, 1);
      return granted === 1
        ? null
        : `refused by the tenant's scheduleRequestsPerSecond (${limits.scheduleRequestsPerSecond} per second)`;
    },
  };
}
