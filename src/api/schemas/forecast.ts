/** Schemas of GET /v1/forecast. */
import { Type, type Static } from 'typebox';
import { Nullable, TimeOutput } from './common.ts';

export const ForecastQuery = Type.Object(
  {
    from: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: '"now" (default), an RFC 3339 time, epoch ms, or a duration from now ("10m")',
      }),
    ),
    to: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'an RFC 3339 time, epoch ms, or a duration after from (default "1h")',
      }),
    ),
    bucket: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 32,
        description: 'bucket size, a duration from "1s" to "1d" (default "1m"); at most 1440 buckets',
      }),
    ),
    by: Type.Optional(
      Type.Unsafe<'destination' | 'tenant'>({
        type: 'string',
        enum: ['destination', 'tenant'],
        description: 'split each bucket by destination (a tenant key) or by tenant (the admin key)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ForecastQueryInput = Static<typeof ForecastQuery>;

export const ForecastResponse = Type.Object({
  from: TimeOutput,
  to: TimeOutput,
  bucket: Type.String(),
  by: Nullable(Type.String()),
  total: Type.Integer({ description: 'scheduled events due in the window' }),
  buckets: Type.Array(
    Type.Object({
      at: TimeOutput,
      count: Type.Integer(),
      spike: Type.Boolean({
        description: 'at least 4 times the median of the 5 buckets on either side, and at least 10',
      }),
      by: Type.Optional(
        Type.Record(Type.String(), Type.Integer(), {
          description: 'counts per destination or tenant (the largest 50 by total; the rest under "(other)")',
        }),
      ),
    }),
  ),
  spikes: Type.Array(TimeOutput, { description: 'the start of every bucket flagged as a spike' }),
});
export type ForecastOutput = Static<typeof ForecastResponse>;
