/** Schemas of the admin routes: tenants and their API keys. Keys are shown once, at creation. */
import { Type, type Static } from '@sinclair/typebox';
import { DurationInput, Id, Nullable, TimeOutput } from './common.ts';
import { LimitsJson, LimitsPatch } from './limits.ts';

/** Per-tenant policy: how its writes are made durable, and when a late first fire is archived. */
const Durability = Type.Union([Type.Literal('strict'), Type.Literal('relaxed')], {
  description: 'strict (default): acknowledged writes survive a crash of the database; relaxed: on PostgreSQL, synchronous_commit=off for this tenant (faster; a database crash may lose the last ~0.6 s of acknowledged writes)',
});
const MissedAfter = Nullable(DurationInput);

export const TenantCreateBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, pattern: '^[^\\x00-\\x1f\\x7f]+$' }),
    durability: Type.Optional(Durability),
    missedAfter: Type.Optional(MissedAfter),
  },
  { additionalProperties: false },
);
export type TenantCreateInput = { name: string; durability?: 'strict' | 'relaxed'; missedAfter?: string | number | null };

export const TenantParams = Type.Object({ tenantId: Id }, { additionalProperties: false });
export type TenantParamsInput = Static<typeof TenantParams>;

export const TenantKeyParams = Type.Object({ tenantId: Id, keyId: Id }, { additionalProperties: false });
export type TenantKeyParamsInput = Static<typeof TenantKeyParams>;

export const TenantJson = Type.Object({
  id: Type.String(),
  name: Type.String(),
  durability: Durability,
  missedAfter: Nullable(Type.String({ description: 'a duration, or null' })),
  createdAt: TimeOutput,
});
export const TenantListResponse = Type.Object({ tenants: Type.Array(TenantJson) });

export const TenantPatchBody = Type.Object(
  { limits: Type.Optional(LimitsPatch), durability: Type.Optional(Durability), missedAfter: Type.Optional(MissedAfter) },
  { additionalProperties: false, minProperties: 1 },
);
export type TenantPatchInput = { limits?: Record<string, number | string | null>; durability?: 'strict' | 'relaxed'; missedAfter?: string | number | null };

export const TenantDetailJson = Type.Object({
  ...TenantJson.properties,
  limits: LimitsJson,
  overrides: Type.Object({}, { additionalProperties: true, description: "the limits this tenant has of its own (the others are the node's defaults)" }),
});

export const ApiKeyJson = Type.Object({
  id: Type.String(),
  prefix: Type.String({ description: 'the first characters of the key, to recognise it' }),
  createdAt: TimeOutput,
  revokedAt: Nullable(TimeOutput),
});
export const ApiKeyCreatedJson = Type.Object({
  id: Type.String(),
  key: Type.String({ description: 'the API key; shown only in this response' }),
  prefix: Type.String(),
  createdAt: TimeOutput,
});
export const ApiKeyListResponse = Type.Object({ keys: Type.Array(ApiKeyJson) });

export const KeyRotateBody = Type.Object(
  {
    gracePeriod: Type.Optional(
      Type.Unsafe<string | number>({ ...DurationInput, description: 'how long the old key keeps working (up to 7d); default 0: revoked at once' }),
    ),
  },
  { additionalProperties: false },
);
export type KeyRotateInput = Static<typeof KeyRotateBody>;

export const KeyIdParams = Type.Object({ keyId: Id }, { additionalProperties: false });

export const ApiKeyRotatedJson = Type.Object({
  ...ApiKeyCreatedJson.properties,
  replaces: Type.String({ description: 'the id of the rotated key' }),
  replacedKeyRevokedAt: Type.String({ description: 'when the rotated key stops working (RFC 3339)' }),
});
