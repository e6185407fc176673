/** Schemas of /v1/schedules: what a client sends, and the one shape of a schedule the API returns. */
import { Type, type Static } from 'typebox';
import {
  DestinationRefOutput,
  DurationInput,
  EventType,
  HeadersInput,
  HeadersOutput,
  Id,
  Nullable,
  RetryInput,
  RetryOutput,
  StringMap,
  TagsInput,
  TimeInput,
  TimeOutput,
} from './common.ts';
import { DestinationInput } from './events.ts';

/** `<schedule id>@<24-character time>` must fit an event id (200): schedule ids are at most 175, without '@'. */
export const SCHEDULE_ID_LENGTH_MAX = 175;
export const ScheduleId = Type.String({
  pattern: `^[A-Za-z0-9._:~=+-]{1,${SCHEDULE_ID_LENGTH_MAX}}$`,
  description: `1-${SCHEDULE_ID_LENGTH_MAX} characters of [A-Za-z0-9._:~=+-] (no @: occurrences are <id>@<time>)`,
});

export const MissedInput = Type.Union([Type.Literal('skip'), Type.Literal('fire-once'), Type.Literal('fire-all')], {
  description:
    'what occurrences missed while Belfry was down, the shard moving or the schedule paused do: skip (default), fire-once (the latest), fire-all (up to catchUpMax)',
});

export const CATCH_UP_MAX_CAP = 1_000;

const timingFields = {
  cron: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'cron: 5 fields (minute hour day month weekday) or 6 (seconds first), in `timezone`',
    }),
  ),
  every: Type.Optional(DurationInput),
  timezone: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone of the cron (default UTC)' }),
  ),
  startAt: Type.Optional(TimeInput),
  endAt: Type.Optional(Nullable(TimeInput)),
  missed: Type.Optional(MissedInput),
  catchUpMax: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: CATCH_UP_MAX_CAP,
      description:
        'fire-all fires at most this many of the missed occurrences of one stretch, the latest (default 100)',
    }),
  ),
  missedAfter: Type.Optional(DurationInput),
};

const templateFields = {
  destination: DestinationInput,
  payload: Type.Optional(Type.Unknown({ description: 'any JSON value, delivered as each occurrence’s body' })),
  headers: Type.Optional(HeadersInput),
  group: Type.Optional(Id),
  retry: Type.Optional(RetryInput),
  expireAfter: Type.Optional(DurationInput),
  tags: Type.Optional(TagsInput),
  type: Type.Optional(EventType),
};

export const ScheduleCreateBody = Type.Object(
  { id: Type.Optional(ScheduleId), ...timingFields, paused: Type.Optional(Type.Boolean()), ...templateFields },
  { additionalProperties: false, description: 'give cron or every, not both' },
);
export type ScheduleCreateInput = Static<typeof ScheduleCreateBody>;

export const SchedulePatchBody = Type.Object(
  {
    ...timingFields,
    paused: Type.Optional(Type.Boolean()),
    ...templateFields,
    destination: Type.Optional(DestinationInput),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description: 'the fields to change; `cron` replaces `every` and the other way round',
  },
);
export type SchedulePatchInput = Static<typeof SchedulePatchBody>;

export const SchedulePreviewBody = Type.Object(
  {
    ...timingFields,
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'how many occurrences (default 10)' })),
    // The template is not needed to preview; accepted so that a create body can be sent as it is.
    id: Type.Optional(ScheduleId),
    paused: Type.Optional(Type.Boolean()),
    ...templateFields,
    destination: Type.Optional(DestinationInput),
  },
  { additionalProperties: false },
);
export type SchedulePreviewInput = Static<typeof SchedulePreviewBody>;

export const ScheduleIdParams = Type.Object({ id: ScheduleId }, { additionalProperties: false });
export type ScheduleIdParamsInput = Static<typeof ScheduleIdParams>;

export const ScheduleListQuery = Type.Object(
  {
    limit: Type.Optional(Type.String({ pattern: '^(?:[1-9][0-9]{0,2}|1000)$', description: '1-1000 (default 100)' })),
    cursor: Type.Optional(ScheduleId),
  },
  { additionalProperties: false },
);
export type ScheduleListQueryInput = Static<typeof ScheduleListQuery>;

export const OccurrenceJson = Type.Object({
  at: TimeOutput,
  local: Type.String({
    description: 'the same instant in the schedule’s zone, with its offset (2026-11-23T09:00:00.000+01:00)',
  }),
});

export const ScheduleJson = Type.Object({
  id: Type.String(),
  cron: Nullable(Type.String()),
  every: Nullable(Type.String()),
  timezone: Type.String(),
  startAt: TimeOutput,
  endAt: Nullable(TimeOutput),
  missed: Type.String(),
  catchUpMax: Type.Integer(),
  missedAfter: Type.String({
    description: 'an occurrence that cannot fire within this of its time is missed (follows `missed`)',
  }),
  paused: Type.Boolean(),
  destination: DestinationRefOutput,
  payload: Type.Unknown(),
  headers: HeadersOutput,
  group: Nullable(Type.String()),
  retry: Nullable(RetryOutput),
  expireAfter: Nullable(Type.String()),
  tags: StringMap,
  type: Nullable(Type.String({ description: 'the kind of each occurrence’s event' })),
  version: Type.Integer({ description: 'grows with every edit, pause and resume; also the ETag' }),
  fired: Type.Integer({ description: 'occurrences whose delivery started' }),
  missedCount: Type.Integer({
    description:
      'occurrences that did not fire because they were missed (see `missed`), or were refused by a tenant limit',
  }),
  lastOccurrenceAt: Nullable(TimeOutput),
  lastMissed: Nullable(
    Type.Object(
      {
        at: TimeOutput,
        count: Type.Integer({ description: 'how many were missed then' }),
        reason: Type.String({ description: 'why: late (missedAfter), or the tenant limit that refused them' }),
      },
      { description: 'the latest occurrences counted missed, and why' },
    ),
  ),
  next: Type.Array(OccurrenceJson, { description: 'the next occurrences from now (none left: empty)' }),
  createdAt: TimeOutput,
  updatedAt: TimeOutput,
});
export type ScheduleJsonOutput = Static<typeof ScheduleJson>;

export const ScheduleListResponse = Type.Object({
  schedules: Type.Array(ScheduleJson),
  nextCursor: Nullable(Type.String()),
});
export const SchedulePreviewResponse = Type.Object({ next: Type.Array(OccurrenceJson) });
