/** Schemas of pull delivery: claim from a pull destination, then ack, nack or extend each event (docs/pull.md). */
import { Type, type Static } from 'typebox';
import { DurationInput, EventType, Nullable, StringMap, TimeOutput } from './common.ts';

/** Receipts are tokens Belfry made; anything longer is not one. */
const Receipt = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'the receipt of the claim, from the claim response',
});

export const PullClaimBody = Type.Object(
  {
    max: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'events to claim at most (default 10)' })),
    visibilityTimeout: Type.Optional(DurationInput),
    wait: Type.Optional(DurationInput),
    types: Type.Optional(
      Type.Array(EventType, {
        minItems: 1,
        maxItems: 10,
        description: 'only events of these types (default: any, untyped included)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type PullClaimInput = Static<typeof PullClaimBody>;

export const ClaimedEventJson = Type.Object({
  id: Type.String(),
  type: Nullable(Type.String()),
  payload: Type.Unknown(),
  headers: StringMap,
  fireAt: TimeOutput,
  attempt: Type.Integer({ description: "this claim's attempt, from 1" }),
  group: Nullable(Type.String()),
  receipt: Type.String({ description: 'ack, nack or extend with it; it holds only while this claim does' }),
  visibleUntil: TimeOutput,
});

export const PullClaimResponse = Type.Object({ events: Type.Array(ClaimedEventJson) });
export type PullClaimOutput = Static<typeof PullClaimResponse>;

export const PullAckBody = Type.Object({ receipt: Receipt }, { additionalProperties: false });
export type PullAckInput = Static<typeof PullAckBody>;

export const PullNackBody = Type.Object(
  {
    receipt: Receipt,
    retryAfter: Type.Optional(DurationInput),
    discard: Type.Optional(Type.Boolean({ description: 'true: the event is discarded, never retried' })),
    reason: Type.Optional(Type.String({ maxLength: 1000, description: "recorded as the event's last error" })),
  },
  { additionalProperties: false },
);
export type PullNackInput = Static<typeof PullNackBody>;

export const PullExtendBody = Type.Object(
  { receipt: Receipt, visibilityTimeout: DurationInput },
  { additionalProperties: false },
);
export type PullExtendInput = Static<typeof PullExtendBody>;

export const PullExtendResponse = Type.Object({ id: Type.String(), visibleUntil: TimeOutput });
