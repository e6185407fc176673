/**
 * Schemas of a tenant's retention: how long its finished events (and their traces) are kept
 * after they became terminal, per terminal state. Generated from RETENTION_STATES so the
 * OpenAPI document lists every state.
 */
import { Type } from 'typebox';
import { formatDuration } from '../../core/duration.ts';
import { RETENTION_DEFAULTS, RETENTION_STATES } from '../../core/retention.ts';
import { DurationInput } from './common.ts';

const keptFor = (state: string) => `how long an event is kept after it became ${state}, with its trace`;

/** Periods to change; null goes back to the node's default. */
export const RetentionPatch = Type.Object(
  Object.fromEntries(
    RETENTION_STATES.map((s) => [
      s,
      Type.Optional(
        Type.Union([
          Type.Unsafe<string | number>({
            ...DurationInput,
            description: `${keptFor(s)}: a duration from "1s" to "3650d", or milliseconds`,
          }),
          Type.Null(),
        ]),
      ),
    ]),
  ),
  {
    additionalProperties: false,
    description: `retention per terminal state (${RETENTION_STATES.join(', ')}); null restores the node's default`,
  },
);

/** The periods in effect. */
export const RetentionJson = Type.Object(
  Object.fromEntries(
    RETENTION_STATES.map((s) => [
      s,
      Type.String({ description: keptFor(s), examples: [formatDuration(RETENTION_DEFAULTS[s])] }),
    ]),
  ),
  {
    description:
      'retention in effect per terminal state: finished events and their traces are deleted this long after they finished',
  },
);

/** The periods the tenant has of its own. */
export const RetentionOverridesJson = Type.Object(
  Object.fromEntries(RETENTION_STATES.map((s) => [s, Type.Optional(Type.String())])),
  {
    additionalProperties: false,
    description: "the retention periods this tenant has of its own (the others are the node's defaults)",
  },
);
