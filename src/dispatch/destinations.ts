/**
 * Resolves where and how an event is delivered: a registered destination's settings (cached for a
 * few seconds, dropped at once when this node changes it) or an inline URL with the defaults.
 *
 * Every HTTP delivery is signed (by the HTTP channel, with the secrets handed to it here). A
 * destination signs with its own secrets; a delivery to an inline URL signs with its tenant's (cached like a destination's, dropped at once when this node
 * rotates them). A tenant made before tenants had secrets gets one at its first inline delivery,
 * written by compare and swap so that two nodes doing it at once agree on one.
 */
import { DEFAULT_RETRY, type RetryPolicy } from '../core/backoff.ts';
import type { Clock } from '../core/clock.ts';
import { brokerTargetOf, type BrokerTarget } from '../core/destination.ts';
import type { DestinationRef } from '../core/event.ts';
import { queueKeyOf, queueOf } from '../core/queue.ts';
import { newWebhookSecret } from '../core/ids.ts';
import { TtlCache } from '../core/ttl-cache.ts';
import type { DestinationSecret, Store } from '../store/store.ts';

export interface DeliverySettings {
  /** The virtual queue: one per (tenant, destination). */
  queueKey: string;
  /** A webhook's URL ('' for a broker destination). */
  target: string;
  /** A broker destination's target (Kafka, NATS, AMQP, Redis): unsigned; null for a webhook. */
  broker?: BrokerTarget | null;
  headers: Record<string, string>;
  /**
   * Newest first; an old secret of a rotation signs until its expiresAt (the HTTP channel signs
   * with those not expired when it sends).
   * Empty for an inline URL: those sign with the tenant's secrets (tenantSecrets), looked up per
   * delivery, as one queue serves every inline URL of an origin.
   */
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
/** Bound on the destinations whose settings are cached. */
export const DESTINATIONS_CACHED_MAX = 10_000;
/** Bound on the tenants whose signing secrets are cached. */
export const TENANT_SECRETS_CACHED_MAX = 10_000;
/** Compare-and-swap rounds of a lazy first secret before the delivery is retried later instead. */
const FIRST_SECRET_ROUNDS_MAX = 3;

type SecretStore = Pick<Store, 'tenantSecretsGet' | 'tenantSecretsSwap'>;

/**
 * The tenant's signing secrets; a tenant that has none (made before tenants had secrets) gets
 * one now. Throws when the tenant does not exist or the store cannot be reached: the delivery is
 * then retried later, never sent unsigned.
 */
export async function tenantSecretsEnsured(store: SecretStore, tenantId: string): Promise<DestinationSecret[]> {
  for (let round = 0; round < FIRST_SECRET_ROUNDS_MAX; round++) {
    const current = await store.tenantSecretsGet({ id: tenantId });
    if (current === null) throw new Error(`no tenant "${tenantId}" to sign for`);
    if (current.length > 0) return current;
    const first = [{ secret: newWebhookSecret(), expiresAt: null }];
    if (await store.tenantSecretsSwap({ id: tenantId, expected: [], secrets: first })) return first;
  }
  throw new Error(`the first signing secret of tenant "${tenantId}" kept changing under it`);
}

export class DestinationResolver {
  /** Per queue: its destination's settings being loaded or loaded. */
  private readonly cache: TtlCache<string, Promise<DeliverySettings>>;
  /** Per tenant: its secrets being loaded or loaded (one store read however many deliveries ask). */
  private readonly tenantSecretCache: TtlCache<string, Promise<DestinationSecret[]>>;

  constructor(
    private readonly store: Pick<Store, 'destinationGet'> & SecretStore,
    clock: Clock,
  ) {
    const nowMs = () => clock.monotonicMs();
    this.cache = new TtlCache({ ttlMs: DESTINATION_CACHE_MS, entriesMax: DESTINATIONS_CACHED_MAX, nowMs });
    this.tenantSecretCache = new TtlCache({
      ttlMs: DESTINATION_CACHE_MS,
      entriesMax: TENANT_SECRETS_CACHED_MAX,
      nowMs,
    });
  }

  /** The signing secrets of the tenant's deliveries to inline URLs, newest first (a failed load is not kept). */
  tenantSecrets(tenantId: string): Promise<DestinationSecret[]> {
    return TtlCache.loadOnce(this.tenantSecretCache, tenantId, () => tenantSecretsEnsured(this.store, tenantId));
  }

  invalidateTenantSecrets(tenantId: string): void {
    this.tenantSecretCache.delete(tenantId);
  }

  async resolve(tenantId: string, destination: DestinationRef): Promise<DeliverySettings> {
    const queueKey = queueKeyOf(tenantId, queueOf(destination));
    if (!('name' in destination)) {
      return {
        queueKey,
        target: destination.url,
        broker: null,
        headers: {},
        secrets: [],
        timeoutMs: INLINE_TIMEOUT_MS,
        retry: DEFAULT_RETRY,
        rateLimitPerSecond: null,
        maxConcurrency: INLINE_CONCURRENCY_MAX,
        missing: false,
      };
    }
    // One store read per destination however many deliveries ask at once: a flood's first claim
    // (hundreds of events of a queue not seen yet) waits for one read, not hundreds in a row. A
    // failed load is not kept: the next delivery asks the store again.
    return TtlCache.loadOnce(this.cache, queueKey, () => this.load(tenantId, destination.name, queueKey));
  }

  private async load(tenantId: string, name: string, queueKey: string): Promise<DeliverySettings> {
    const row = await this.store.destinationGet({ tenantId, name });
    return row
      ? {
          queueKey,
          target: 'url' in row.config ? row.config.url : '',
          broker: brokerTargetOf(row.config),
          headers: row.config.headers,
          secrets: row.secrets,
          timeoutMs: row.config.timeoutMs,
          retry: row.config.retry ?? DEFAULT_RETRY,
          rateLimitPerSecond: row.config.rateLimitPerSecond,
          maxConcurrency: row.config.maxConcurrency,
          missing: false,
        }
      : { ...MISSING, queueKey, target: '' };
  }

  invalidate(tenantId: string, name: string): void {
    this.cache.delete(queueKeyOf(tenantId, queueOf({ name })));
  }
}

const MISSING: Omit<DeliverySettings, 'queueKey' | 'target'> = {
  broker: null,
  headers: {},
  secrets: [],
  timeoutMs: INLINE_TIMEOUT_MS,
  retry: DEFAULT_RETRY,
  rateLimitPerSecond: null,
  maxConcurrency: 1,
  missing: true,
};
