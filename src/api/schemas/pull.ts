/** Schemas of pull delivery: claim from a pull destination, then ack, nack or extend each event (docs/pull.md). */
import { Type, type Static } from 'typebox';
import { DurationInput, EventType, Id, ItemError, Nullable, StringMap, TimeOutput } from './common.ts';

/** Receipts are tokens Belfry made; anything longer is not one. */
const Receipt = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'the receipt of the claim, from the claim response',
});

/** Acks and nacks one settle request (or one claim's `ack`) carries at most. */
export const PULL_SETTLE_ITEMS_MAX = 1_000;

const AckItem = Type.Object({ id: Id, receipt: Receipt }, { additionalProperties: false });

const NackFields = {
  receipt: Receipt,
  retryAfter: Type.Optional(DurationInput),
  discard: Type.Optional(Type.Boolean({ description: 'true: the event is discarded, never retried' })),
  reason: Type.Optional(Type.String({ maxLength: 1000, description: "recorded as the event's last error" })),
};

const NackItem = Type.Object({ id: Id, ...NackFields }, { additionalProperties: false });

export const PullClaimBody = Type.Object(
  {
    ack: Type.Optional(
      Type.Array(AckItem, {
        maxItems: PULL_SETTLE_ITEMS_MAX,
        description:
          'acks of earlier claims, applied before this claim looks for events (its answer then carries `settled`)',
      }),
    ),
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

/** What became of one ack or nack of a batch. One object shape with optional parts, as batch results are. */
export const PullSettledJson = Type.Object({
  id: Type.String(),
  status: Type.Unsafe<'settled' | 'error'>({ type: 'string', enum: ['settled', 'error'] }),
  state: Type.Optional(
    Type.Unsafe<'succeeded' | 'awaiting_retry' | 'archived' | 'discarded'>({
      type: 'string',
      enum: ['succeeded', 'awaiting_retry', 'archived', 'discarded'],
      description: "with status 'settled': the event's state after it",
    }),
  ),
  error: Type.Optional(ItemError),
});

export const PullClaimResponse = Type.Object({
  events: Type.Array(ClaimedEventJson),
  settled: Type.Optional(Type.Array(PullSettledJson, { description: "the claim's `ack`, in the order given" })),
});
export type PullClaimOutput = Static<typeof PullClaimResponse>;

export const PullAckBody = Type.Object({ receipt: Receipt }, { additionalProperties: false });
export type PullAckInput = Static<typeof PullAckBody>;

export const PullNackBody = Type.Object(NackFields, { additionalProperties: false });
export type PullNackInput = Static<typeof PullNackBody>;

export const PullSettleBody = Type.Object(
  {
    ack: Type.Optional(Type.Array(AckItem, { maxItems: PULL_SETTLE_ITEMS_MAX })),
    nack: Type.Optional(Type.Array(NackItem, { maxItems: PULL_SETTLE_ITEMS_MAX })),
  },
  { additionalProperties: false },
);
export type PullSettleInput = Static<typeof PullSettleBody>;

export const PullSettleResponse = Type.Object({
  results: Type.Array(PullSettledJson, { description: 'the acks, then the nacks, each in the order given' }),
});
export type PullSettleOutput = Static<typeof PullSettleResponse>;

export const PullExtendBody = Type.Object(
  { receipt: Receipt, visibilityTimeout: DurationInput },
  { additionalProperties: false },
);
export type PullExtendInput = Static<typeof PullExtendBody>;

export const PullExtendResponse = Type.Object({ id: Type.String(), visibleUntil: TimeOutput });
