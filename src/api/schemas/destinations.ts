/** Schemas of /v1/destinations. Secrets are write-only: no response carries one, except a generated one, once. */
import { Type, type Static } from 'typebox';
import {
  DurationInput,
  HeadersInput,
  HeadersOutput,
  Name,
  Nullable,
  RetryInput,
  RetryOutput,
  TimeOutput,
} from './common.ts';

/** Kafka SASL credentials (destinations and sources); the password is write-only. */
export const KafkaSasl = Type.Object(
  {
    mechanism: Type.Union([Type.Literal('plain'), Type.Literal('scram-sha-256'), Type.Literal('scram-sha-512')]),
    username: Type.String({ minLength: 1, maxLength: 256 }),
    password: Type.String({ minLength: 1, maxLength: 1024, description: 'write-only' }),
  },
  { additionalProperties: false },
);

/** Standard Webhooks secret: whsec_ + base64 of 24 to 64 bytes. */
export const SECRET_PATTERN = '^whsec_[A-Za-z0-9+/]{32,88}={0,2}$';

/** What every kind of destination shares. */
const commonFields = {
  headers: Type.Optional(HeadersInput),
  timeout: Type.Optional(DurationInput),
  retry: Type.Optional(RetryInput),
  rateLimit: Type.Optional(
    Type.Object(
      { perSecond: Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 }) },
      { additionalProperties: false },
    ),
  ),
  maxConcurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'default 20' })),
};

/** The explicit opt-in to send a broker's credentials over a connection without TLS. */
const AllowInsecureCredentials = Type.Optional(
  Type.Boolean({
    description:
      'send the credentials (a password in the URL, a NATS token, SASL PLAIN) even without TLS, where anyone on the network path can read them; ' +
      'without it, credentials over redis://, amqp://, nats:// or Kafka SASL PLAIN without ssl are refused (400). Default false',
  }),
);

const BrokerUrl = (what: string) =>
  Type.String({ minLength: 1, maxLength: 2048, description: `${what}; a password in it is write-only` });
/** Kafka topic names: 1-249 of [A-Za-z0-9._-]. */
const KafkaTopic = Type.String({ pattern: '^[A-Za-z0-9._-]{1,249}$', description: 'the topic' });

export const HttpDestinationBody = Type.Object(
  {
    kind: Type.Literal('http', { description: 'default: a webhook' }),
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description: 'http or https URL, without credentials (user:password@ is refused: give them in a header)',
    }),
    secret: Type.Optional(
      Type.String({
        pattern: SECRET_PATTERN,
        description: 'write-only; generated and returned once when left out on creation',
      }),
    ),
    ...commonFields,
  },
  { additionalProperties: false, title: 'http' },
);

export const KafkaDestinationBody = Type.Object(
  {
    kind: Type.Literal('kafka'),
    brokers: Type.Array(Type.String({ minLength: 3, maxLength: 300, description: 'host:port' }), {
      minItems: 1,
      maxItems: 16,
    }),
    topic: KafkaTopic,
    sasl: Type.Optional(KafkaSasl),
    ssl: Type.Optional(Type.Boolean()),
    allowInsecureCredentials: AllowInsecureCredentials,
    ...commonFields,
  },
  { additionalProperties: false, title: 'kafka' },
);

export const NatsDestinationBody = Type.Object(
  {
    kind: Type.Literal('nats'),
    servers: Type.Array(BrokerUrl('nats://host:port, or tls://host:port (TLS only); all of one scheme'), {
      minItems: 1,
      maxItems: 16,
    }),
    subject: Type.String({ pattern: '^[^\\s*>]+$', maxLength: 256, description: 'a JetStream subject (no wildcards)' }),
    token: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'write-only' })),
    allowInsecureCredentials: AllowInsecureCredentials,
    ...commonFields,
  },
  { additionalProperties: false, title: 'nats' },
);

export const AmqpDestinationBody = Type.Object(
  {
    kind: Type.Literal('amqp'),
    url: BrokerUrl('amqp://user:password@host:port/vhost'),
    exchange: Type.String({
      maxLength: 255,
      description: 'the exchange ("" is the default exchange, routing by queue name)',
    }),
    routingKey: Type.Optional(Type.String({ maxLength: 255 })),
    allowInsecureCredentials: AllowInsecureCredentials,
    ...commonFields,
  },
  { additionalProperties: false, title: 'amqp' },
);

export const RedisDestinationBody = Type.Object(
  {
    kind: Type.Literal('redis'),
    url: BrokerUrl('redis://[user:password@]host:port[/db]'),
    stream: Type.String({ minLength: 1, maxLength: 512, description: 'the stream key' }),
    maxLen: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1_000_000_000,
        description: 'approximate cap on the stream length (XADD MAXLEN ~)',
      }),
    ),
    allowInsecureCredentials: AllowInsecureCredentials,
    ...commonFields,
  },
  { additionalProperties: false, title: 'redis' },
);

export const PullDestinationBody = Type.Object(
  {
    kind: Type.Literal('pull', {
      description: 'consumers claim its due events (POST /v1/destinations/{name}/claim); nothing is pushed',
    }),
    retry: Type.Optional(RetryInput),
  },
  { additionalProperties: false, title: 'pull' },
);

/**
 * One body per kind, chosen by `kind` (ajv's discriminator: errors name the chosen kind's
 * fields). `kind` defaults to `http`: the route fills it in before validation.
 */
export const DestinationPutBody = Type.Unsafe<
  | Static<typeof HttpDestinationBody>
  | Static<typeof KafkaDestinationBody>
  | Static<typeof NatsDestinationBody>
  | Static<typeof AmqpDestinationBody>
  | Static<typeof RedisDestinationBody>
  | Static<typeof PullDestinationBody>
>({
  type: 'object',
  required: ['kind'],
  discriminator: { propertyName: 'kind' },
  oneOf: [
    HttpDestinationBody,
    KafkaDestinationBody,
    NatsDestinationBody,
    AmqpDestinationBody,
    RedisDestinationBody,
    PullDestinationBody,
  ],
  description:
    'a webhook (`kind` http, the default), a broker target: kafka, nats (JetStream), amqp (RabbitMQ), redis (Streams), or `pull` (consumers claim its events)',
});
export type DestinationPutInput = Static<typeof DestinationPutBody>;

export const DestinationNameParams = Type.Object({ name: Name }, { additionalProperties: false });
export type DestinationNameParamsInput = Static<typeof DestinationNameParams>;

export const DestinationJson = Type.Object({
  name: Type.String(),
  kind: Type.String({ description: 'http, kafka, nats, amqp, redis or pull' }),
  url: Type.Optional(
    Type.String({ description: 'http, amqp, redis: the URL, its password (or a user name given alone) shown as ***' }),
  ),
  brokers: Type.Optional(Type.Array(Type.String())),
  topic: Type.Optional(Type.String()),
  ssl: Type.Optional(Type.Boolean()),
  sasl: Type.Optional(Nullable(Type.Object({ mechanism: Type.String(), username: Type.String() }))),
  servers: Type.Optional(Type.Array(Type.String())),
  subject: Type.Optional(Type.String()),
  exchange: Type.Optional(Type.String()),
  routingKey: Type.Optional(Type.String()),
  stream: Type.Optional(Type.String()),
  maxLen: Type.Optional(Nullable(Type.Integer())),
  allowInsecureCredentials: Type.Optional(
    Type.Boolean({
      description: 'present (true) only when the destination sends its credentials without TLS by choice',
    }),
  ),
  headers: HeadersOutput,
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
    gracePeriod: Type.Optional(
      Type.Unsafe<string | number>({
        ...DurationInput,
        description: 'how long the old secret keeps signing beside the new one; default 24h, at most 7d',
      }),
    ),
    secret: Type.Optional(
      Type.String({ pattern: SECRET_PATTERN, description: 'the new secret; generated when left out' }),
    ),
  },
  { additionalProperties: false },
);
export type SecretRotateInput = Static<typeof SecretRotateBody>;

export const SecretRotatedJson = Type.Object({
  name: Type.String(),
  secret: Type.String({ description: 'the new secret; shown only in this response' }),
  previousSecretsExpireAt: TimeOutput,
});

/** GET /v1/destinations/{name}/health: the destination's virtual queue as the answering node sees it. */
export const DestinationHealthJson = Type.Object({
  name: Type.String(),
  nodeId: Type.String({
    description: 'the node that answered: each node delivers the events of the shards it owns, and keeps its own queue',
  }),
  queue: Type.Union(
    [
      Type.Object({
        circuit: Type.Union([Type.Literal('closed'), Type.Literal('open'), Type.Literal('half_open')]),
        waiting: Type.Integer({ description: 'events handed to the queue, not yet started (concurrency, rate limit)' }),
        inFlight: Type.Integer({ description: 'deliveries started, not finished' }),
        claimed: Type.Integer({
          description: 'events claimed for this queue on this node and not yet recorded (its depth here)',
        }),
        deliveries: Type.Integer({
          description: 'attempts in the recent window (the last 200 that reached the channel)',
        }),
        successRate: Nullable(Type.Number({ description: 'delivered ÷ attempts in the window' })),
        p99DurationMs: Nullable(Type.Integer({ description: "the window's 99th percentile attempt duration" })),
      }),
      Type.Null(),
    ],
    { description: 'null: this node has delivered nothing to it since it started, or forgot the idle queue' },
  ),
});
export type DestinationHealthOutput = Static<typeof DestinationHealthJson>;
