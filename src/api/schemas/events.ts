/** Schemas of /v1/events: what a client sends, and the one shape of an event the API returns. */
import { Type, type Static } from 'typebox';
import { EVENT_STATES, type EventState, type TransitionRecord } from '../../core/event.ts';
import { BATCH_EVENTS_CAP } from '../../core/tenant-limits.ts';
import {
  DestinationRefOutput,
  DurationInput,
  EventType,
  HeadersInput,
  HeadersOutput,
  Id,
  ItemError,
  Name,
  Nullable,
  RetryInput,
  RetryOutput,
  StringMap,
  TagsInput,
  TimeInput,
  TimeOutput,
} from './common.ts';

export const InlineDestination = Type.Object(
  { url: Type.String({ minLength: 1, maxLength: 2048, description: 'http or https URL' }) },
  { additionalProperties: false },
);

/** A registered destination's name, or an inline URL. */
export const DestinationInput = Type.Union([Name, InlineDestination], {
  description: 'a registered destination name, or {"url": "https://..."}',
});

const eventFields = {
  fireAt: Type.Optional(TimeInput),
  delay: Type.Optional(DurationInput),
  destination: DestinationInput,
  payload: Type.Optional(Type.Unknown({ description: 'any JSON value, delivered as the request body' })),
  headers: Type.Optional(HeadersInput),
};

export const EventCreateBody = Type.Object(
  {
    id: Type.Optional(Id),
    ...eventFields,
    group: Type.Optional(Id),
    retry: Type.Optional(RetryInput),
    expireAfter: Type.Optional(DurationInput),
    tags: Type.Optional(TagsInput),
    type: Type.Optional(EventType),
  },
  { additionalProperties: false, description: 'give fireAt or delay (or neither, to fire now), not both' },
);
export type EventCreateInput = Static<typeof EventCreateBody>;

export const EventPatchBody = Type.Object(
  {
    fireAt: Type.Optional(TimeInput),
    delay: Type.Optional(DurationInput),
    destination: Type.Optional(DestinationInput),
    payload: Type.Optional(Type.Unknown()),
    headers: Type.Optional(HeadersInput),
    type: Type.Optional(Nullable(EventType)),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type EventPatchInput = Static<typeof EventPatchBody>;

/** The batch envelope; each item is validated on its own so one bad item fails alone. */
export const EventBatchBody = Type.Object(
  {
    events: Type.Array(Type.Unknown({ description: 'an event body, as for POST /v1/events' }), {
      minItems: 1,
      maxItems: BATCH_EVENTS_CAP,
      description: `at most the tenant's batchEventsMax (default 1000; never more than ${BATCH_EVENTS_CAP})`,
    }),
  },
  { additionalProperties: false },
);
export type EventBatchInput = Static<typeof EventBatchBody>;

export const EventIdParams = Type.Object({ id: Id }, { additionalProperties: false });
export type EventIdParamsInput = Static<typeof EventIdParams>;

export const EventStateSchema = Type.Unsafe<EventState>({ type: 'string', enum: [...EVENT_STATES] });

export const EventListQuery = Type.Object(
  {
    state: Type.Optional(EventStateSchema),
    destination: Type.Optional(Name),
    group: Type.Optional(Id),
    schedule: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9._:~=+-]{1,175}$',
        description:
          "a schedule's occurrences (ids <schedule>@<time>), newest occurrence first; combines with no other filter",
      }),
    ),
    type: Type.Optional(EventType),
    from: Type.Optional(Type.String({ maxLength: 64, description: 'fireAt ≥ from (RFC 3339 or epoch ms)' })),
    to: Type.Optional(Type.String({ maxLength: 64, description: 'fireAt < to (RFC 3339 or epoch ms)' })),
    limit: Type.Optional(Type.String({ pattern: '^([1-9][0-9]{0,2}|1000)$', description: '1 to 1000, default 100' })),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 512, description: 'nextCursor of the previous page' }),
    ),
  },
  { additionalProperties: false },
);
export type EventListQueryInput = Static<typeof EventListQuery>;

export const EventJson = Type.Object({
  id: Type.String(),
  state: EventStateSchema,
  version: Type.Integer({ description: 'grows with every change; also the ETag' }),
  fireAt: TimeOutput,
  dueAt: TimeOutput,
  destination: DestinationRefOutput,
  payload: Type.Unknown(),
  headers: HeadersOutput,
  group: Nullable(Type.String()),
  retry: Nullable(RetryOutput),
  expireAt: Nullable(TimeOutput),
  tags: StringMap,
  type: Nullable(Type.String()),
  attempts: Type.Integer(),
  lastStatus: Nullable(Type.Integer()),
  lastError: Nullable(Type.String()),
  createdAt: TimeOutput,
  updatedAt: TimeOutput,
});
export type EventJsonOutput = Static<typeof EventJson>;

export const EventListResponse = Type.Object({
  events: Type.Array(EventJson),
  nextCursor: Nullable(Type.String()),
});

/**
 * One object shape with optional parts (not a union), so serialising 1000 results stays cheap.
 * A created or existing item carries `event`, or with `Prefer: return=minimal` only its `id` and
 * `version`; an error item carries `error`.
 */
export const EventBatchResponse = Type.Object({
  results: Type.Array(
    Type.Object({
      status: Type.Unsafe<'created' | 'existing' | 'error'>({ type: 'string', enum: ['created', 'existing', 'error'] }),
      event: Type.Optional(EventJson),
      id: Type.Optional(Type.String({ description: 'with Prefer: return=minimal, in place of event' })),
      version: Type.Optional(Type.Integer({ description: 'with Prefer: return=minimal, in place of event' })),
      error: Type.Optional(ItemError),
    }),
  ),
});

export const TransitionJson = Type.Object({
  seq: Type.Integer(),
  at: TimeOutput,
  kind: Type.Unsafe<TransitionRecord['kind']>({ type: 'string', enum: ['created', 'updated', 'state', 'replayed'] }),
  fromState: Nullable(EventStateSchema),
  toState: EventStateSchema,
  attempt: Type.Integer(),
  status: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  durationMs: Nullable(Type.Number()),
  latenessMs: Nullable(Type.Number()),
  detail: Nullable(Type.Object({}, { additionalProperties: true })),
});

export const TransitionListQuery = Type.Object(
  {
    limit: Type.Optional(Type.String({ pattern: '^([1-9][0-9]{0,2}|1000)$', description: '1 to 1000, default 1000' })),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 512, description: 'nextCursor of the previous page' }),
    ),
  },
  { additionalProperties: false },
);
export type TransitionListQueryInput = Static<typeof TransitionListQuery>;

export const TransitionListResponse = Type.Object({
  transitions: Type.Array(TransitionJson),
  nextCursor: Nullable(
    Type.String({ description: 'present when the trace goes on past this page: pass it as `cursor`' }),
  ),
});
