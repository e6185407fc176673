/**
 * Per-tenant limits at request time: each tenant's effective limits (its overrides over the
 * node's defaults, cached briefly), its scheduling rate (a token bucket per tenant,
 * core/token-bucket.ts) and its
 * pending-events quota (an estimate, from counts made in the background).
 *
 * Bounds and staleness:
 * - Limits are cached for LIMITS_CACHE_TTL_MS; a change through this node applies at once, one
 *   through another node within the TTL.
 * - The rate is enforced per node (buckets live in memory): a tenant spreading requests over N
 *   nodes gets up to N times its rate. Bucket capacity is one second of the rate (the burst).
 * - Pending events: no request waits for a first count. A tenant's estimate starts from the count
 *   sampler's latest sample (maintenance/count-sampler.ts: every tenant at once, in the background),
 *   plus the events this node accepted for it since that count began; each new sample replaces it
 *   the same way. The estimate only over-counts (events finish and are not subtracted), so when a
 *   request would pass the limit by it, the tenant is recounted (its own pending index entries,
 *   off the event loop) and that one request waits for the recount, at most once per
 *   max(PENDING_RECOUNT_MS_MIN, 50 × the last count's duration) so counting takes ≤ 2% of the
 *   time even for a tenant sitting at its limit. On a shared store (several nodes) a tenant in use
 *   is also recounted in the background, as other nodes accept events too, when its estimate is
 *   older than max(PENDING_STALE_MS_CLUSTER, 50 × the last count's duration).
 *   Before the node's first sample (the seconds after a start while the first count runs) a
 *   tenant without an estimate is admitted; it is counted on its own in the background only when
 *   no sample is being counted (the first one failed). Overshoot bound: the requests in flight at once (they are checked before any of
 *   them commits), what a tenant schedules before its first estimate exists, plus, in a cluster,
 *   what other nodes accept between two counts.
 * - Every map holds at most TENANTS_TRACKED_MAX tenants; the oldest entry goes first.
 */
import type { FastifyRequest } from 'fastify';
import type { Clock } from '../core/clock.ts';
import { TokenBucket } from '../core/token-bucket.ts';
import { TtlCache } from '../core/ttl-cache.ts';
import type { CountSample, CountSampler } from '../maintenance/count-sampler.ts';
import type { Store } from '../store/store.ts';
import { overLimit, resolveTenantLimits, type TenantLimits } from '../core/tenant-limits.ts';

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
  /** The count it rests on plus the events this node made pending since that count began. */
  count: number;
  /** Monotonic ms when the count it rests on began. */
  countedAtMs: number;
  /** How long that count took: spaces the next one. */
  countMs: number;
  /** Events made pending since the sampler's current count began (merged into its sample). */
  addedSinceSampleStart: number;
  /** Events made pending since this tenant's own recount began (merged into its result). */
  addedSinceRecountStart: number;
}

/** A tenant's scheduling-rate bucket and the rate it was last given. */
interface Bucket {
  bucket: TokenBucket;
  perSecond: number;
}

/**
 * A tenant's pending events in a sample: 0 when a complete sample does not name it; when the
 * sample kept only the largest tenants, at most the smallest count it kept.
 */
function sampledPending(sample: CountSample, tenantId: string): number {
  return sample.pendingByTenant.get(tenantId) ?? (sample.complete ? 0 : sample.pendingLeastKept);
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
  private readonly limitsCache: TtlCache<string, TenantLimits>;
  private readonly buckets = new Map<string, Bucket>();
  private readonly pending = new Map<string, PendingEstimate>();
  private readonly counting = new Map<string, Promise<PendingEstimate>>();

  constructor(
    private readonly store: Pick<Store, 'tenantGet' | 'eventCountPending' | 'capabilities'>,
    private readonly clock: Clock,
    private readonly defaults: TenantLimits,
    private readonly counts: CountSampler,
  ) {
    this.limitsCache = new TtlCache({
      ttlMs: LIMITS_CACHE_TTL_MS,
      entriesMax: TENANTS_TRACKED_MAX,
      nowMs: () => clock.monotonicMs(),
    });
    counts.onCountStart(() => {
      for (const e of this.pending.values()) e.addedSinceSampleStart = 0;
    });
    counts.onSample((sample) => {
      for (const [tenantId, e] of this.pending) {
        if (e.countedAtMs >= sample.startedAtMs) continue;
        e.count = sampledPending(sample, tenantId) + e.addedSinceSampleStart;
        e.countedAtMs = sample.startedAtMs;
        e.countMs = sample.durationMs;
      }
    });
  }

  /** The tenant's effective limits. */
  async limits(tenantId: string): Promise<TenantLimits> {
    return this.limitsCache.get(tenantId) ?? this.limitsCache.refresh(tenantId, () => this.readLimits(tenantId));
  }

  private async readLimits(tenantId: string): Promise<TenantLimits> {
    const tenant = await this.store.tenantGet({ id: tenantId });
    return resolveTenantLimits(this.defaults, tenant?.settings);
  }

  /**
   * The tenant's limits as last read, without waiting (for a path that must not: a claim), or null
   * before the first read; past LIMITS_CACHE_TTL_MS they are read again in the background.
   */
  limitsNow(tenantId: string): TenantLimits | null {
    return this.limitsCache.peekRefreshing(tenantId, () => this.readLimits(tenantId), { readAbsent: true }) ?? null;
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
    const { waitMs } = this.bucketOf(tenantId, perSecond).takeUpTo(1);
    if (waitMs > 0) {
      const retryAfterSec = Math.max(1, Math.ceil(waitMs / 1000));
      throw overLimit('scheduleRequestsPerSecond', perSecond, '', 'too many scheduling requests', {
        'retry-after': String(retryAfterSec),
      });
    }
  }

  /**
   * Takes up to `want` scheduling requests from the tenant's bucket, the one the API's requests
   * take from (a Kafka source's message counts as one request, as a POST does). Never throws:
   * `granted` may be 0, and then `waitMs` says when the next one is due. A source waits, it does
   * not refuse: its messages stay in the topic meanwhile.
   */
  takeScheduleRequestsUpTo(tenantId: string, perSecond: number, want: number): { granted: number; waitMs: number } {
    return this.bucketOf(tenantId, perSecond).takeUpTo(want);
  }

  /** The tenant's bucket (capacity: one second of the rate; a new one starts full), at the rate given, and kept. */
  private bucketOf(tenantId: string, perSecond: number): TokenBucket {
    let kept = this.buckets.get(tenantId);
    if (!kept) kept = { bucket: new TokenBucket({ perSecond, burst: perSecond }, this.clock), perSecond };
    else if (kept.perSecond !== perSecond) {
      kept.bucket.setRate({ perSecond, burst: perSecond });
      kept.perSecond = perSecond;
    }
    boundedSet(this.buckets, tenantId, kept, TENANTS_TRACKED_MAX);
    return kept.bucket;
  }

  /**
   * Throws 403 `quota_exceeded` when `adding` more pending events would take the tenant past
   * `max`. Call before writing; report what was written with pendingAdded().
   */
  async checkPending(tenantId: string, adding: number, max: number): Promise<void> {
    if (adding <= 0) return;
    const nowMs = this.clock.monotonicMs();
    let estimate = this.estimate(tenantId);
    if (!estimate) {
      // No sample yet (the node just started): admit, and count this tenant in the background
      // unless the first sample is being counted (a second scan of the same rows would only
      // slow both).
      if (!this.counts.counting()) this.recount(tenantId).catch(() => {});
      return;
    }
    if (
      this.store.capabilities.multiNode &&
      nowMs - estimate.countedAtMs >= Math.max(PENDING_STALE_MS_CLUSTER, COUNT_SPACING_FACTOR * estimate.countMs)
    ) {
      // Other nodes accept events too: refresh, without holding this request back.
      this.recount(tenantId).catch(() => {});
    }
    if (estimate.count + adding <= max) return;
    const spacingMs = Math.max(PENDING_RECOUNT_MS_MIN, COUNT_SPACING_FACTOR * estimate.countMs);
    if (nowMs - estimate.countedAtMs >= spacingMs) estimate = await this.recount(tenantId);
    if (estimate.count + adding <= max) return;
    throw overLimit(
      'pendingEventsMax',
      max,
      adding > 1 ? 'events' : '',
      `${estimate.count} events pending, ${adding} more asked for`,
    );
  }

  /** Resolves once the tenant's count in flight, if any, has landed (whatever its outcome). */
  async whenCounted(tenantId: string): Promise<void> {
    await this.counting.get(tenantId)?.catch(() => {});
  }

  /** Counts `n` events this node just made pending (created or replayed) into the tenant's estimate. */
  pendingAdded(tenantId: string, n: number): void {
    const estimate = this.pending.get(tenantId);
    if (!estimate || n <= 0) return;
    estimate.count += n;
    estimate.addedSinceSampleStart += n;
    estimate.addedSinceRecountStart += n;
  }

  /** The tenant's estimate: kept, or made from the latest sample; null before the first sample. */
  private estimate(tenantId: string): PendingEstimate | null {
    const kept = this.pending.get(tenantId);
    if (kept) return kept;
    const sample = this.counts.latest();
    if (!sample) return null;
    const estimate = {
      count: sampledPending(sample, tenantId),
      countedAtMs: sample.startedAtMs,
      countMs: sample.durationMs,
      addedSinceSampleStart: 0,
      addedSinceRecountStart: 0,
    };
    boundedSet(this.pending, tenantId, estimate, TENANTS_TRACKED_MAX);
    return estimate;
  }

  /** Counts one tenant's pending events (off the event loop); one count per tenant at a time. */
  private recount(tenantId: string): Promise<PendingEstimate> {
    let p = this.counting.get(tenantId);
    if (!p) {
      const startMs = this.clock.monotonicMs();
      const kept = this.pending.get(tenantId);
      if (kept) kept.addedSinceRecountStart = 0;
      p = this.store
        .eventCountPending({ tenantId })
        .then((count) => {
          const endMs = this.clock.monotonicMs();
          const current = this.pending.get(tenantId);
          // A sample that began after this count is fresher: keep it.
          if (current && current.countedAtMs > startMs) return current;
          const estimate: PendingEstimate = current ?? {
            count: 0,
            countedAtMs: 0,
            countMs: 0,
            addedSinceSampleStart: 0,
            addedSinceRecountStart: 0,
          };
          // Events accepted since the count began may be missing from it: add what this node accepted.
          estimate.count = count + (current?.addedSinceRecountStart ?? 0);
          estimate.countedAtMs = startMs;
          estimate.countMs = endMs - startMs;
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
    if (request.routeOptions.config.schedules)
      this.takeScheduleRequest(request.tenantId, request.limits.scheduleRequestsPerSecond);
  };
}
