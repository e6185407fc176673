/** Schemas of /v1/destinations. Secrets are write-only: no response carries one, except a generated one, once. */
import { Type, type Static } from '@sinclair/typebox';
import { DurationInput, HeadersInput, Name, Nullable, RetryInput, RetryOutput, StringMap, TimeOutput } from './common.ts';

/** Standard Webhooks secret: whsec_ + base64 of 24 to 64 bytes. */
export const SECRET_PATTERN = '^whsec_[A-Za-z0-9+/]{32,88}={0,2}$';

export const DestinationPutBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048, description: 'http or https URL' }),
    headers: Type.Optional(HeadersInput),
    secret: Type.Optional(Type.String({ pattern: SECRET_PATTERN, description: 'write-only; generated and returned once when left out on creation' })),
    timeout: Type.Optional(DurationInput),
    retry: Type.Optional(RetryInput),
    rateLimit: Type.Optional(
      Type.Object({ perSecond: Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 }) }, { additionalProperties: false }),
    ),
    maxConcurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'default 20' })),
  },
  { additionalProperties: false },
);
export type DestinationPutInput = Static<typeof DestinationPutBody>;

export const DestinationNameParams = Type.Object({ name: Name }, { additionalProperties: false });
export type DestinationNameParamsInput = Static<typeof DestinationNameParams>;

export const DestinationJson = Type.Object({
  name: Type.String(),
  url: Type.String(),
  headers: StringMap,
  timeout: Type.String(),
  retry: Nullable(RetryOutput),
  rateLimit: Nullable(Type.Object({ perSecond: Type.Number() })),
  maxConcurrency: Type.Integer(),
  createdAt: TimeOutput,
  updatedAt: TimeOutput,
  secret: Type.Optional(Type.String({ description: 'present only in the response that generated it' })),
});
export type DestinationJsonOutput = Static<typeof DestinationJson>;

export const DestinationListResponse = Type.Object({ destinations: Type.Array(DestinationJson) });

export const SecretRotateBody = Type.Object(
  {
    gracePeriod: Type.Optional(Type.Unsafe<string | number>({ ...DurationInput, description: 'how long the old secret keeps signing beside the new one; default 24h, at most 7d' })),
    secret: Type.Optional(Type.String({ pattern: SECRET_PATTERN, description: 'the new secret; generated when left out' })),
  },
  { additionalProperties: false },
);
export type SecretRotateInput = Static<typeof SecretRotateBody>;

export const SecretRotatedJson = Type.Object({
  name: Type.String(),
  secret: Type.String({ description: 'the new secret; shown only in this response' }),
  previousSecretsExpireAt: TimeOutput,
});
