/**
 * The Store's part for accounts: tenants (their settings, which hold their limits and quotas, and
 * their signing secrets), their API keys and their registered destinations. Implemented by each
 * backend's account-store.ts.
 */

import type { DestinationConfig } from '../../core/destination.ts';

/** A destination's stored settings, typed per kind (durations in ms): see core/destination.ts. */
export type { DestinationConfig } from '../../core/destination.ts';

export interface TenantRecord {
  id: string;
  name: string;
  /** Per-tenant settings (limits, durability); free-form JSON validated by the API. */
  settings: Record<string, unknown>;
  createdAt: number;
}

/** A tenant to create, with the signing secrets it starts with (none: '[]', generated lazily). */
export interface NewTenantRecord extends TenantRecord {
  signingSecrets?: DestinationSecret[];
}

export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  /** SHA-256 hex of the key; the key itself is never stored. */
  hash: string;
  /** The first characters of the key, to recognise it in a list. */
  prefix: string;
  createdAt: number;
  revokedAt: number | null;
}

/** A signing secret of a destination, or of a tenant (for its deliveries to inline URLs). */
export interface DestinationSecret {
  /** `whsec_` + base64. */
  secret: string;
  /** Signs until this instant (an old secret kept through a rotation's grace period); null: until replaced. */
  expiresAt: number | null;
}

/** Stored secrets as records; accepts the bare strings older versions stored. */
export function secretsFromJson(value: unknown): DestinationSecret[] {
  if (!Array.isArray(value)) return [];
  return value.map((s: unknown) => (typeof s === 'string' ? { secret: s, expiresAt: null } : (s as DestinationSecret)));
}

export interface DestinationRecord {
  tenantId: string;
  name: string;
  config: DestinationConfig;
  /** Signing secrets, newest first. Never returned by the API after creation. */
  secrets: DestinationSecret[];
  createdAt: number;
  updatedAt: number;
}

/** The tenant, API key and destination methods of Store. */
export interface AccountStore {
  tenantCreate(tenant: NewTenantRecord): Promise<void>;
  tenantGet(params: { id: string }): Promise<TenantRecord | null>;
  tenantList(): Promise<TenantRecord[]>;
  /** Replaces a tenant's settings; returns the tenant as stored, or null when there is none. */
  tenantUpdate(params: { id: string; settings: Record<string, unknown> }): Promise<TenantRecord | null>;
  /**
   * The tenant's signing secrets, newest first (they sign its deliveries to inline URLs); null
   * when there is no such tenant. Empty for a tenant made before tenants had secrets. Kept apart
   * from TenantRecord so that nothing reading tenants can pass a secret on.
   */
  tenantSecretsGet(params: { id: string }): Promise<DestinationSecret[] | null>;
  /**
   * Replaces the tenant's signing secrets with `secrets`, only while they are still `expected`
   * (compare and swap): two nodes generating a first secret at once, or two rotations at once,
   * never lose one. Returns whether it applied.
   */
  tenantSecretsSwap(params: {
    id: string;
    expected: DestinationSecret[];
    secrets: DestinationSecret[];
  }): Promise<boolean>;
  apiKeyCreate(key: ApiKeyRecord): Promise<void>;
  apiKeyFindByHash(params: { hash: string }): Promise<ApiKeyRecord | null>;
  apiKeyList(params: { tenantId: string }): Promise<ApiKeyRecord[]>;
  /**
   * Revokes a key of that tenant that is live at `now` (not revoked, or revoked at a time still
   * to come: a rotated key in its grace period), with effect at `at` (default `now`). A revoke
   * only ever brings the revocation time forward, never back. Returns false when no such live
   * key exists.
   */
  apiKeyRevoke(params: { tenantId: string; id: string; now: number; at?: number }): Promise<boolean>;
  /** Creates or replaces (a replace keeps the stored createdAt); returns whether it was created. */
  destinationPut(params: {
    destination: DestinationRecord;
  }): Promise<{ created: boolean; destination: DestinationRecord }>;
  destinationGet(params: { tenantId: string; name: string }): Promise<DestinationRecord | null>;
  destinationList(params: { tenantId: string }): Promise<DestinationRecord[]>;
  destinationDelete(params: { tenantId: string; name: string }): Promise<boolean>;
}
