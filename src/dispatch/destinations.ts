/**
 * Resolves where and how an event is delivered: a registered destination's settings (cached for a
 * few seconds, dropped at once when this node changes it) or an inline URL with the defaults.
 */
import { DEFAULT_RETRY, type RetryPolicy } from '../core/backoff.ts';
import type { Clock } from '../core/clock.ts';
import type { DestinationRef } from '../core/event.ts';
import type { DestinationSecret, Store } from '../store/store.ts';

export interface DeliverySettings {
  /** The virtual queue: one per (tenant, destination). */
  queueKey: string;
  target: string;
  headers: Record<string, string>;
  /** Newest first; an old secret of a rotation signs until its expiresAt (see activeSecrets). */
  secrets: DestinationSecret[];
  timeoutMs: number;
  retry: RetryPolicy;
  rateLimitPerSecond: number | null;
  maxConcurrency: number;
  /** Set when the destination does not exist (deleted since the event was made). */
  missing: boolean;
}

export const INLINE_TIMEOUT_MS = 10_000;
export const INLINE_CONCURRENCY_MAX = 20;
export const DESTINATION_CACHE_MS = 5_000;

/** The secrets that sign a delivery made at `nowMs`: those not expired, newest first. */
export function activeSecrets(secrets: readonly DestinationSecret[], nowMs: number): string[] {
  return secrets.filter((s) => s.expiresAt === null || s.expiresAt > nowMs).map((s) => s.secret);
}

export function queueKeyOf(tenantId: string, destination: DestinationRef): string {
  if ('name' in destination) return `${tenantId}\u0000name:${destination.name}`;
  let origin: string;
  try {
    origin = new URL(destination.url).origin;
  } catch {
    origin = destination.url;
  }
  return `${tenantId}\u0000url:${origin}`;
}

export class DestinationResolver {
  private cache = new Map<string, { settings: DeliverySettings; loadedAtMs: number }>();

  constructor(
    private readonly store: Pick<Store, 'destinationGet'>,
    private readonly clock: Clock,
  ) {}

  async resolve(tenantId: string, destination: DestinationRef): Promise<DeliverySettings> {
    const queueKey = queueKeyOf(tenantId, destination);
    if (!('name' in destination)) {
      return {
        queueKey,
        target: destination.url,
        headers: {},
        secrets: [],
        timeoutMs: INLINE_TIMEOUT_MS,
        retry: DEFAULT_RETRY,
        rateLimitPerSecond: null,
        maxConcurrency: INLINE_CONCURRENCY_MAX,
        missing: false,
      };
    }
    const cached = this.cache.get(queueKey);
    if (cached && this.clock.monotonicMs() - cached.loadedAtMs < DESTINATION_CACHE_MS) return cached.settings;
    const row = await this.store.destinationGet({ tenantId, name: destination.name });
    const settings: DeliverySettings = row
      ? {
          queueKey,
          target: row.config.url,
          headers: row.config.headers,
          secrets: row.secrets,
          timeoutMs: row.config.timeoutMs,
          retry: row.config.retry ?? DEFAULT_RETRY,
          rateLimitPerSecond: row.config.rateLimitPerSecond,
          maxConcurrency: row.config.maxConcurrency,
          missing: false,
        }
      : { ...MISSING, queueKey, target: '' };
    this.cache.set(queueKey, { settings, loadedAtMs: this.clock.monotonicMs() });
    return settings;
  }

  invalidate(tenantId: string, name: string): void {
    this.cache.delete(queueKeyOf(tenantId, { name }));
  }
}

const MISSING: Omit<DeliverySettings, 'queueKey' | 'target'> = {
  headers: {},
  secrets: [],
  timeoutMs: INLINE_TIMEOUT_MS,
  retry: DEFAULT_RETRY,
  rateLimitPerSecond: null,
  maxConcurrency: 1,
  missing: true,
};
