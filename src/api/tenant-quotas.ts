/**
 * Per-tenant limits at request time: each tenant's effective limits (its overrides over the
 * node's defaults, cached briefly) and its scheduling rate (a token bucket per tenant).
 *
 * Bounds and staleness:
 * - Limits are cached for LIMITS_CACHE_TTL_MS; a change through this node applies at once, one
 *   through another node within the TTL.
 * - The rate is enforced per node (buckets live in memory): a tenant spreading requests over N
 *   nodes gets up to N times its rate. Bucket capacity is one second of the rate (the burst).
 * - Both maps hold at most TENANTS_TRACKED_MAX tenants; the oldest entry goes first.
 */
import type { FastifyRequest } from 'fastify';
import type { Clock } from '../core/clock.ts';
import type { Store } from '../store/store.ts';
import { overLimit, resolveTenantLimits, type TenantLimits } from './limits.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated tenant's limits; set by TenantQuotas.onRequest on tenant routes. */
    limits: TenantLimits;
  }
  interface FastifyContextConfig {
    /** The route schedules events: it counts against scheduleRequestsPerSecond. */
    schedules?: boolean;
  }
}

export const LIMITS_CACHE_TTL_MS = 1_000;
export const TENANTS_TRACKED_MAX = 10_000;

interface Bucket {
  tokens: number;
  atMs: number;
}

/** Inserts into a Map bounded to `max` entries, dropping the oldest. */
function boundedSet<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  if (map.size >= max) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}

export class TenantQuotas {
  private readonly limitsCache = new Map<string, { limits: TenantLimits; expiresMs: number }>();
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly store: Pick<Store, 'tenantGet'>,
    private readonly clock: Clock,
    private readonly defaults: TenantLimits,
  ) {}

  /** The tenant's effective limits. */
  async limits(tenantId: string): Promise<TenantLimits> {
    const nowMs = this.clock.monotonicMs();
    const hit = this.limitsCache.get(tenantId);
    if (hit && hit.expiresMs > nowMs) return hit.limits;
    const tenant = await this.store.tenantGet({ id: tenantId });
    const limits = resolveTenantLimits(this.defaults, tenant?.settings);
    boundedSet(this.limitsCache, tenantId, { limits, expiresMs: nowMs + LIMITS_CACHE_TTL_MS }, TENANTS_TRACKED_MAX);
    return limits;
  }

  /** Drops the cached limits of a tenant whose settings changed through this node. */
  forget(tenantId: string): void {
    this.limitsCache.delete(tenantId);
    this.buckets.delete(tenantId);
  }

  /**
   * Takes one scheduling request from the tenant's bucket; throws 429 `rate_limited` with
   * Retry-After (whole seconds, at least 1) when it is empty.
   */
  takeScheduleRequest(tenantId: string, perSecond: number): void {
    const nowMs = this.clock.monotonicMs();
    const bucket = this.buckets.get(tenantId) ?? { tokens: perSecond, atMs: nowMs };
    bucket.tokens = Math.min(perSecond, bucket.tokens + ((nowMs - bucket.atMs) / 1000) * perSecond);
    bucket.atMs = nowMs;
    if (bucket.tokens < 1) {
      boundedSet(this.buckets, tenantId, bucket, TENANTS_TRACKED_MAX);
      const retryAfterSec = Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond));
      throw overLimit('scheduleRequestsPerSecond', perSecond, '', 'too many scheduling requests', { 'retry-after': String(retryAfterSec) });
    }
    bucket.tokens -= 1;
    boundedSet(this.buckets, tenantId, bucket, TENANTS_TRACKED_MAX);
  }

  /** onRequest hook of the tenant routes, after authentication: loads limits, applies the rate. */
  readonly onRequest = async (request: FastifyRequest): Promise<void> => {
    request.limits = await this.limits(request.tenantId);
    if (request.routeOptions.config.schedules) this.takeScheduleRequest(request.tenantId, request.limits.scheduleRequestsPerSecond);
  };
}
