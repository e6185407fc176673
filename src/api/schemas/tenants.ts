/** Schemas of the admin routes: tenants and their API keys. Keys are shown once, at creation. */
import { Type, type Static } from 'typebox';
import type { TenantDurability } from '../../core/tenant-settings.ts';
import { DurationInput, Id, Nullable, TimeOutput } from './common.ts';
import { LimitsJson, LimitsPatch } from './limits.ts';
import { RetentionJson, RetentionOverridesJson, RetentionPatch } from './retention.ts';

/** Per-tenant policy: how its writes are made durable, and when a late first fire is archived. */
const Durability = Type.Union([Type.Literal('strict'), Type.Literal('relaxed')], {
  description:
    'strict (default): acknowledged writes survive a crash of the database; relaxed: on PostgreSQL, synchronous_commit=off for this tenant (faster; a database crash may lose the last ~0.6 s of acknowledged writes)',
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
export type TenantCreateInput = {
  name: string;
  durability?: TenantDurability;
  missedAfter?: string | number | null;
};

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
export const TenantCreatedJson = Type.Object({
  ...TenantJson.properties,
  signingSecret: Type.String({
    description:
      "the tenant's signing secret (whsec_ + base64): it signs deliveries to inline URLs; shown only in this response (rotate it with POST /v1/tenants/{tenantId}/signing-secret/rotate or, as the tenant, POST /v1/signing-secret/rotate)",
  }),
});
export const TenantSecretRotatedJson = Type.Object({
  secret: Type.String({ description: 'the new signing secret; shown only in this response' }),
  previousSecretsExpireAt: TimeOutput,
});
export const TenantListResponse = Type.Object({ tenants: Type.Array(TenantJson) });

export const TenantPatchBody = Type.Object(
  {
    limits: Type.Optional(LimitsPatch),
    durability: Type.Optional(Durability),
    missedAfter: Type.Optional(MissedAfter),
    retention: Type.Optional(RetentionPatch),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type TenantPatchInput = {
  limits?: Record<string, number | string | null>;
  durability?: TenantDurability;
  missedAfter?: string | number | null;
  retention?: Record<string, string | number | null>;
};

export const TenantDetailJson = Type.Object({
  ...TenantJson.properties,
  limits: LimitsJson,
  overrides: Type.Object(
    {},
    {
      additionalProperties: true,
      description: "the limits this tenant has of its own (the others are the node's defaults)",
    },
  ),
  retention: RetentionJson,
  retentionOverrides: RetentionOverridesJson,
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
      Type.Unsafe<string | number>({
        ...DurationInput,
        description: 'how long the old key keeps working (up to 7d); default 0: revoked at once',
      }),
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
