/**
 * Authentication: `Authorization: Bearer <key>`.
 *
 * - The admin key (from config) may call only the admin routes; it is not a tenant.
 * - A tenant key is `bk_` + 32 random bytes (base64url). Only its SHA-256 is stored, with a short
 *   prefix to recognise it in lists. A revoked key fails like an unknown one.
 * - Lookups are cached for KEY_CACHE_TTL_MS (1 s) so a busy client costs no store read per
 *   request. A revocation through this node drops the entry at once; one through another node
 *   sharing the store takes effect here within the TTL: that is the bound on "revoked at once,
 *   on every node".
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Clock } from '../core/clock.ts';
import { BelfryError } from '../core/errors.ts';
import { newSecretToken, sha256Digest, sha256Hex } from '../core/ids.ts';
import { TtlCache } from '../core/ttl-cache.ts';
import type { ApiKeyRecord, Store } from '../store/store.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated tenant; set by Authenticator.requireTenant, empty elsewhere. */
    tenantId: string;
  }
}

export const API_KEY_PREFIX = 'bk_';
/** Characters of a key kept as its visible prefix ("bk_" and 8 more): 48 bits, not enough to guess the rest. */
export const API_KEY_VISIBLE_CHARS = 11;
/**
 * The bound on how long another node keeps accepting a key revoked elsewhere: a lookup is
 * cached this long. One store read per key per second per node is the price.
 */
export const KEY_CACHE_TTL_MS = 1_000;
export const KEY_CACHE_ENTRIES_MAX = 10_000;
const TOKEN_LENGTH_MAX = 512;

export type Principal = { kind: 'admin' } | { kind: 'tenant'; tenantId: string; keyId: string };

/** A new API key: the secret to show once, and the record to store. */
export function newApiKey(tenantId: string, id: string, now: number): { key: string; record: ApiKeyRecord } {
  const key = newSecretToken(API_KEY_PREFIX);
  return {
    key,
    record: {
      id,
      tenantId,
      hash: sha256Hex(key),
      prefix: key.slice(0, API_KEY_VISIBLE_CHARS),
      createdAt: now,
      revokedAt: null,
    },
  };
}

function unauthorized(message: string): BelfryError {
  return new BelfryError('unauthorized', message);
}

export class Authenticator {
  /** Lookups by the key's hash, an unknown key (null) included. */
  private readonly cache: TtlCache<string, ApiKeyRecord | null>;
  private readonly adminDigest: Buffer | null;

  constructor(
    private readonly store: Pick<Store, 'apiKeyFindByHash'>,
    private readonly clock: Clock,
    adminKey: string,
  ) {
    this.adminDigest = adminKey.length > 0 ? sha256Digest(adminKey) : null;
    this.cache = new TtlCache({
      ttlMs: KEY_CACHE_TTL_MS,
      entriesMax: KEY_CACHE_ENTRIES_MAX,
      nowMs: () => clock.monotonicMs(),
    });
  }

  /** Who sent the request; throws 401 when nobody valid did. */
  async identify(authorization: string | undefined): Promise<Principal> {
    if (!authorization) throw unauthorized('missing Authorization: Bearer <api key>');
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    if (!m || m[1].length > TOKEN_LENGTH_MAX) throw unauthorized('Authorization must be "Bearer <api key>"');
    const token = m[1];
    // One digest per request: compared with the admin key's (the same time whatever the token's
    // length), and in hex the stored hash of a tenant key (sha256Hex).
    const tokenDigest = sha256Digest(token);
    if (this.adminDigest && timingSafeEqual(tokenDigest, this.adminDigest)) return { kind: 'admin' };
    if (!token.startsWith(API_KEY_PREFIX)) throw unauthorized('invalid API key');
    const record = await this.lookup(tokenDigest.toString('hex'));
    // A rotated key in its grace period has a revokedAt still to come.
    if (!record || (record.revokedAt !== null && record.revokedAt <= this.clock.now()))
      throw unauthorized('invalid or revoked API key');
    return { kind: 'tenant', tenantId: record.tenantId, keyId: record.id };
  }

  /** Drops every cached lookup of `keyId`, so its revocation applies at once on this node. */
  forget(keyId: string): void {
    this.cache.deleteWhere((record) => record?.id === keyId);
  }

  /** onRequest hook of the /v1 tenant routes. */
  readonly requireTenant = async (request: FastifyRequest): Promise<void> => {
    const who = await this.identify(request.headers.authorization);
    if (who.kind !== 'tenant')
      throw new BelfryError('forbidden', 'the admin key cannot act as a tenant; use a tenant API key');
    request.tenantId = who.tenantId;
  };

  /** onRequest hook of the admin routes. */
  readonly requireAdmin = async (request: FastifyRequest): Promise<void> => {
    const who = await this.identify(request.headers.authorization);
    if (who.kind !== 'admin') throw new BelfryError('forbidden', 'this route needs the admin key');
  };

  private async lookup(hash: string): Promise<ApiKeyRecord | null> {
    const hit = this.cache.peek(hash);
    if (hit?.fresh) return hit.value;
    const readAtMs = this.clock.monotonicMs();
    const record = await this.store.apiKeyFindByHash({ hash });
    this.cache.set(hash, record, readAtMs);
    return record;
  }
}
