/**
 * Per-tenant limits at request time: each tenant's effective limits (its overrides over the
 * node's defaults, cached briefly), its scheduling rate (a token bucket per tenant) and its
 * pending-events quota (an estimate, recounted rarely).
 *
 * Bounds and staleness:
 * - Limits are cached for LIMITS_CACHE_TTL_MS; a change through this node applies at once, one
 *   through another node within the TTL.
 * - The rate is enforced per node (buckets live in memory): a tenant spreading requests over N
 *   nodes gets up to N times its rate. Bucket capacity is one second of the rate (the burst).
 * - Pending events: counting them scans the tenant's pending index entries (~8 ms per 200k on
 *   SQLite), so each node keeps an estimate per tenant: its last count plus the events it
 *   accepted since. The estimate only over-counts (events finish, and are not subtracted), so it
 *   is recounted only when a request would pass the limit by it, at most once per
 *   max(PENDING_RECOUNT_MS_MIN, 50 × the last count's duration) so counting takes ≤ 2% of the
 *   time even for a tenant sitting at its limit. On a shared store (several nodes) it is also
 *   recounted in the background, as other nodes accept events too, when older than
 *   max(PENDING_STALE_MS_CLUSTER, 50 × the last count's duration): requests go on with the
 *   estimate meanwhile (a tenant with 10 million pending events takes seconds to count, and
 *   waiting for that held every scheduling request of the tenant back by as long).
 *   Overshoot bound: the requests in flight at once (they are checked before any of them
 *   commits), plus, in a cluster, what other nodes accept between two counts.
 * - Every map holds at most TENANTS_TRACKED_MAX tenants; the oldest entry goes first.
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
export const PENDING_RECOUNT_MS_MIN = 1_000;
export const PENDING_STALE_MS_CLUSTER = 5_000;
export const TENANTS_TRACKED_MAX = 10_000;
/** Counts of a tenant's pending events are at least this many times their own duration apart (≤ 2 % of the time). */
const COUNT_SPACING_FACTOR = 50;

interface PendingEstimate {
  count: number;
  countedAtMs: number;
  /** How long the last count took: spaces the next one. */
  countMs: number;
}

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
  private readonly pending = new Map<string, PendingEstimate>();
  private readonly counting = new Map<string, Promise<PendingEstimate>>();

  constructor(
    private readonly store: Pick<Store, 'tenantGet' | 'eventCountPending' | 'capabilities'>,
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
    this.pending.delete(tenantId);
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

  /**
   * Throws 403 `quota_exceeded` when `adding` more pending events would take the tenant past
   * `max`. Call before writing; report what was written with pendingAdded().
   */
  async checkPending(tenantId: string, adding: number, max: number): Promise<void> {
    if (adding <= 0) return;
    const nowMs = this.clock.monotonicMs();
    let estimate = this.pending.get(tenantId);
    if (!estimate) estimate = await this.countPending(tenantId);
    else if (this.store.capabilities.multiNode && nowMs - estimate.countedAtMs >= Math.max(PENDING_STALE_MS_CLUSTER, COUNT_SPACING_FACTOR * estimate.countMs)) {
      // Other nodes accept events too: refresh, without holding this request back.
      this.countPending(tenantId).catch(() => {});
    }
    if (estimate.count + adding <= max) return;
    const spacingMs = Math.max(PENDING_RECOUNT_MS_MIN, COUNT_SPACING_FACTOR * estimate.countMs);
    if (nowMs - estimate.countedAtMs >= spacingMs) estimate = await this.countPending(tenantId);
    if (estimate.count + adding <= max) return;
    throw overLimit('pendingEventsMax', max, adding > 1 ? 'events' : '', `${estimate.count} events pending, ${adding} more asked for`);
  }

  /** Counts `n` events this node just made pending (created or replayed) into the tenant's estimate. */
  pendingAdded(tenantId: string, n: number): void {
    const estimate = this.pending.get(tenantId);
    if (estimate && n > 0) estimate.count += n;
  }

  private countPending(tenantId: string): Promise<PendingEstimate> {
    let p = this.counting.get(tenantId);
    if (!p) {
      const startMs = this.clock.monotonicMs();
      p = this.store
        .eventCountPending({ tenantId })
        .then((count) => {
          const endMs = this.clock.monotonicMs();
          const estimate = { count, countedAtMs: endMs, countMs: endMs - startMs };
          boundedSet(this.pending, tenantId, estimate, TENANTS_TRACKED_MAX);
          return estimate;
        })
        .finally(() => this.counting.delete(tenantId));
      this.counting.set(tenantId, p);
    }
    return p;
  }

  /** onRequest hook of the tenant routes, after authentication: loads limits, applies the rate. */
  readonly onRequest = async (request: FastifyRequest): Promise<void> => {
    request.limits = await this.limits(request.tenantId);
    if (request.routeOptions.config.schedules) this.takeScheduleRequest(request.tenantId, request.limits.scheduleRequestsPerSecond);
  };
}
