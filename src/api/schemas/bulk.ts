/** Schemas of POST /v1/events/bulk and GET /v1/bulk/{id}. */
import { Type, type Static } from 'typebox';
import { EventType, Id, Name, Nullable, TagsInput, TimeInput, TimeOutput } from './common.ts';
import { EventJson, EventStateSchema } from './events.ts';

export const BulkFilterBody = Type.Object(
  {
    state: Type.Optional(EventStateSchema),
    destination: Type.Optional(Name),
    group: Type.Optional(Id),
    type: Type.Optional(EventType),
    tags: Type.Optional(TagsInput),
    fireAtFrom: Type.Optional(TimeInput),
    fireAtTo: Type.Optional(TimeInput),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description: 'at least one of these; every one given must match (tags: each tag given, with that value)',
  },
);

export const BulkActionBody = Type.Union(
  [
    Type.Unsafe<'cancel' | 'replay'>({ type: 'string', enum: ['cancel', 'replay'] }),
    Type.Object(
      {
        shift: Type.String({
          pattern: '^[+-][0-9]{1,12}(ms|s|m|h|d)$',
          description: 'a signed duration: "+1h", "-30m"',
        }),
      },
      { additionalProperties: false },
    ),
    Type.Object({ redirect: Name }, { additionalProperties: false }),
  ],
  { description: '"cancel", "replay", {"shift": "+1h"} or {"redirect": "<destination>"}' },
);

export const BulkBody = Type.Object(
  {
    filter: BulkFilterBody,
    action: BulkActionBody,
    dryRun: Type.Optional(Type.Boolean({ description: 'count and sample the events selected; change nothing' })),
  },
  { additionalProperties: false },
);
export type BulkInput = Static<typeof BulkBody>;

export const BulkDryRunResponse = Type.Object({
  matched: Type.Integer({ description: 'events the filter selects (at least this many when exact is false)' }),
  exact: Type.Boolean({ description: 'false when counting stopped at its bound: then matched is a lower bound' }),
  applicable: Type.Integer({ description: 'of those counted, events in a state the action applies to' }),
  sample: Type.Array(EventJson, { description: 'the newest events selected, at most 10' }),
});

export const BulkAccepted = Type.Object({ id: Type.String(), state: Type.String() });

export const BulkIdParams = Type.Object(
  { id: Type.String({ pattern: '^bulk_[0-9a-z]{26}$' }) },
  { additionalProperties: false },
);
export type BulkIdParamsInput = Static<typeof BulkIdParams>;

export const BulkJobJson = Type.Object({
  id: Type.String(),
  state: Type.Unsafe<'running' | 'succeeded' | 'failed'>({ type: 'string', enum: ['running', 'succeeded', 'failed'] }),
  filter: Type.Object({}, { additionalProperties: true }),
  action: Type.Unknown(),
  matched: Type.Integer({ description: 'events selected so far' }),
  done: Type.Integer({ description: 'events changed' }),
  skipped: Type.Integer({
    description: 'events selected but left alone: in a state the action does not apply to, or changed meanwhile',
  }),
  errors: Type.Array(Type.String(), { description: "the job's own failures (not the events')" }),
  createdAt: TimeOutput,
  updatedAt: TimeOutput,
  finishedAt: Nullable(TimeOutput),
});
