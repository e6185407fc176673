/**
 * Schemas of per-tenant limits, generated from LIMIT_SPECS so the OpenAPI document lists every
 * limit with its default, its bounds and what it protects.
 */
import { Type, type TSchema } from 'typebox';
import { formatDuration } from '../../core/duration.ts';
import { formatLimit, LIMIT_SPECS, type LimitSpec } from '../../core/tenant-limits.ts';
import { DurationInput } from './common.ts';

function describeLimit(spec: LimitSpec): string {
  return `${spec.protects}. Default ${formatLimit(spec, spec.default)}; a tenant's value may be ${formatLimit(spec, spec.min)} to ${formatLimit(spec, spec.max)}.`;
}

function inputSchema(spec: LimitSpec): TSchema {
  const description = describeLimit(spec);
  if (spec.kind === 'duration')
    return Type.Unsafe<string | number>({
      ...DurationInput,
      description: `${description} A duration such as "30d", or milliseconds.`,
    });
  return Type.Integer({ minimum: spec.min, maximum: spec.max, description });
}

function outputSchema(spec: LimitSpec): TSchema {
  const description = describeLimit(spec);
  return spec.kind === 'duration'
    ? Type.String({ description, examples: [formatDuration(spec.default)] })
    : Type.Integer({ description, examples: [spec.default] });
}

/** Overrides of a tenant's limits: each given limit is set; `null` goes back to the node's default. */
export const LimitsPatch = Type.Object(
  Object.fromEntries(LIMIT_SPECS.map((s) => [s.name, Type.Optional(Type.Union([inputSchema(s), Type.Null()]))])),
  { additionalProperties: false, description: "limits to change; null restores the node's default" },
);

/** A tenant's effective limits. */
export const LimitsJson = Type.Object(Object.fromEntries(LIMIT_SPECS.map((s) => [s.name, outputSchema(s)])), {
  description: 'per-tenant limits in effect',
});
