/** Schemas of /v1/sources. SASL passwords are write-only: no response carries one. */
import { Type, type Static } from 'typebox';
import { Name, Nullable, TimeOutput } from './common.ts';
import { KafkaSasl } from './destinations.ts';

/** Kafka topic names: 1-249 of [A-Za-z0-9._-]. */
const KafkaTopic = (description: string) => Type.String({ pattern: '^[A-Za-z0-9._-]{1,249}$', description });

export const SourcePutBody = Type.Object(
  {
    kind: Type.Literal('kafka', { description: 'the only kind for now' }),
    brokers: Type.Array(Type.String({ minLength: 3, maxLength: 300, description: 'host:port' }), {
      minItems: 1,
      maxItems: 16,
    }),
    topic: KafkaTopic('the topic the schedule requests are read from'),
    groupId: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9._-]{1,249}$',
        description:
          "the Kafka consumer group the nodes share; default: the source's own, belfry/<tenant id>/<source name> (no other source can name it)",
      }),
    ),
    deadLetterTopic: Type.Optional(
      KafkaTopic(
        'where invalid messages go, bytes unchanged, with the reason in a `belfry-error` header; left out: they are counted and skipped',
      ),
    ),
    start: Type.Optional(
      Type.Union([Type.Literal('earliest'), Type.Literal('latest')], {
        description: 'where a new consumer group starts: earliest (default) or latest, skipping what the topic holds',
      }),
    ),
    sasl: Type.Optional(KafkaSasl),
    ssl: Type.Optional(Type.Boolean()),
    allowInsecureCredentials: Type.Optional(
      Type.Boolean({
        description:
          'let SASL PLAIN send its password without "ssl": true, readable by anyone on the network path; without it that is refused (400). Default false',
      }),
    ),
  },
  { additionalProperties: false },
);
export type SourcePutInput = Static<typeof SourcePutBody>;

export const SourceNameParams = Type.Object({ name: Name }, { additionalProperties: false });
export type SourceNameParamsInput = Static<typeof SourceNameParams>;

export const SourceListQuery = Type.Object(
  {
    limit: Type.Optional(Type.String({ pattern: '^([1-9][0-9]{0,2}|1000)$', description: '1-1000, default 100' })),
    cursor: Type.Optional(Name),
  },
  { additionalProperties: false },
);
export type SourceListQueryInput = Static<typeof SourceListQuery>;

export const SourceJson = Type.Object({
  name: Type.String(),
  kind: Type.String({ description: 'kafka' }),
  brokers: Type.Array(Type.String()),
  topic: Type.String(),
  groupId: Type.String(),
  deadLetterTopic: Nullable(Type.String()),
  start: Type.String({ description: 'earliest or latest' }),
  ssl: Type.Boolean(),
  sasl: Nullable(Type.Object({ mechanism: Type.String(), username: Type.String() })),
  allowInsecureCredentials: Type.Optional(
    Type.Boolean({ description: 'present (true) only when SASL PLAIN goes without TLS by choice' }),
  ),
  version: Type.Integer({ description: 'grows with each PUT' }),
  state: Type.String({
    description: 'starting (no node reads it yet), running, or failing (a node cannot read it: see lastErrors)',
  }),
  lag: Nullable(
    Type.Integer({
      description:
        'messages not yet read, over every partition, as the readers last reported; null before the first report',
    }),
  ),
  accepted: Type.Integer({ description: 'messages whose events were stored' }),
  rejected: Type.Integer({ description: 'messages refused (sent to the dead-letter topic)' }),
  lastErrors: Type.Array(Type.Object({ at: TimeOutput, message: Type.String() }), {
    description: 'the newest last, at most 10',
  }),
  createdAt: TimeOutput,
  updatedAt: TimeOutput,
});
export type SourceJsonOutput = Static<typeof SourceJson>;

export const SourceListResponse = Type.Object({ sources: Type.Array(SourceJson), nextCursor: Nullable(Type.String()) });
