/**
 * Schema pieces shared by every resource: ids, names, times, durations, maps, the error shape.
 * Each schema both validates requests (Fastify's ajv) and documents them (/openapi.json).
 */
import { Type, type Static, type TSchema, type TUnsafe } from 'typebox';

/** Longest id or name accepted anywhere; ApiLimits.idLengthMax may lower it. */
export const ID_LENGTH_MAX = 200;

/**
 * Ids of events, groups, tenants and keys: 1 to 200 printable ASCII characters that need no
 * escaping in a URL path segment or a log line. No '/', '?', '#', '%', whitespace, control or
 * non-ASCII characters. ':' and '@' are allowed so schedule occurrences
 * (`<schedule id>@2026-01-01T09:00:00Z`) are valid ids.
 */
export const ID_PATTERN = '^[A-Za-z0-9._:@~=+-]{1,200}$';

/** Destination names: shorter and plainer than ids, as they appear in metrics and logs. */
export const NAME_PATTERN = '^[A-Za-z0-9._-]{1,100}$';

/**
 * Event types (`order.timeout`, `billing/invoice.due`): 1 to 100 characters, a letter or digit
 * first, then letters, digits and `._:/-`. They travel as a header value (`belfry-type`) and a
 * query parameter, so nothing needs escaping or quoting.
 */
export const EVENT_TYPE_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$';
export const EventType = Type.String({
  pattern: EVENT_TYPE_PATTERN,
  minLength: 1,
  maxLength: 100,
  description: 'the kind of event: 1-100 characters of [A-Za-z0-9._:/-], a letter or digit first',
});

export const Id = Type.String({
  pattern: ID_PATTERN,
  minLength: 1,
  maxLength: ID_LENGTH_MAX,
  description: `1-${ID_LENGTH_MAX} characters of [A-Za-z0-9._:@~=+-]`,
});
export const Name = Type.String({
  pattern: NAME_PATTERN,
  minLength: 1,
  maxLength: 100,
  description: '1-100 characters of [A-Za-z0-9._-]',
});

/** A time: an RFC 3339 string or epoch milliseconds (checked further by parseTimeMs). */
export const TimeInput = Type.Unsafe<string | number>({
  type: ['string', 'integer'],
  maxLength: 64,
  description: 'RFC 3339 time (2026-11-22T10:21:55Z) or epoch milliseconds',
});

/** A duration: "250ms", "30s", "5m", "4h", "7d" or milliseconds (checked further by parseDurationMs). */
export const DurationInput = Type.Unsafe<string | number>({
  type: ['string', 'integer'],
  maxLength: 32,
  description: 'duration such as "250ms", "30s", "5m", "4h", "7d", or milliseconds',
});

/** RFC 3339 UTC time as returned by the API. */
export const TimeOutput = Type.String({ description: 'RFC 3339 UTC time' });

/**
 * `T | null`. Written as a type list (`"type": ["string", "null"]`, valid in OpenAPI 3.1) rather
 * than anyOf, so the response serialiser needs no trial validation per value.
 */
export function Nullable<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  const type = (schema as { type?: unknown }).type;
  if (typeof type === 'string') return Type.Unsafe<Static<T> | null>({ ...schema, type: [type, 'null'] });
  return Type.Unsafe<Static<T> | null>(Type.Union([schema, Type.Null()]));
}

/** A string-keyed map whose keys match `keyPattern` (propertyNames, so OpenAPI shows the rule). */
export function StringRecord(
  keyPattern: string,
  value: TSchema,
  opts: { maxProperties: number; description: string },
): TUnsafe<Record<string, string>> {
  return Type.Unsafe<Record<string, string>>({
    type: 'object',
    propertyNames: { pattern: keyPattern },
    additionalProperties: value,
    maxProperties: opts.maxProperties,
    description: opts.description,
  });
}

/** HTTP header names (RFC 9110 token characters). */
export const HEADER_NAME_PATTERN = "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$";
/** Header values: visible ASCII, spaces and tabs only (no CR/LF, so no header injection; Node refuses non-latin1 anyway). */
export const HEADER_VALUE_PATTERN = '^[\\t\\x20-\\x7e]*$';

export const HeadersInput = StringRecord(
  HEADER_NAME_PATTERN,
  Type.String({ maxLength: 4096, pattern: HEADER_VALUE_PATTERN }),
  {
    maxProperties: 50,
    description: 'extra HTTP headers sent with each delivery',
  },
);

export const StringMap = Type.Record(Type.String(), Type.String());

/** Headers as responses show them (event-json.ts headersForDisplay). */
export const HeadersOutput = Type.Record(Type.String(), Type.String(), {
  description:
    'extra HTTP headers sent with each delivery; the value of a credential header (authorization, proxy-authorization, cookie, set-cookie, x-api-key, or a name containing auth, token, secret, passw, key, cookie, credential or session) is shown as ***, and sent as stored',
});

/** A destination as an event or a schedule shows it: its name, or an inline URL (credentials in it shown as ***). */
export const DestinationRefOutput = Type.Union([
  Type.String(),
  Type.Object({ url: Type.String({ description: 'a user name or password in it shown as ***' }) }),
]);

export const TagsInput = StringRecord('^[A-Za-z0-9._:/-]{1,64}$', Type.String({ maxLength: 256 }), {
  maxProperties: 32,
  description: 'free-form labels',
});

export const RetryInput = Type.Object(
  {
    maxAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
    minBackoff: Type.Optional(DurationInput),
    maxBackoff: Type.Optional(DurationInput),
    coefficient: Type.Optional(Type.Number({ minimum: 1, maximum: 10 })),
  },
  { additionalProperties: false },
);
export type RetryInputBody = Static<typeof RetryInput>;

export const RetryOutput = Type.Object({
  maxAttempts: Type.Integer(),
  minBackoff: Type.String(),
  maxBackoff: Type.String(),
  coefficient: Type.Number(),
});

export const ErrorDetail = Type.Object(
  { field: Type.Optional(Type.String()), message: Type.Optional(Type.String()) },
  { additionalProperties: true },
);

export const ErrorBody = Type.Object({
  code: Type.String(),
  message: Type.String(),
  details: Type.Optional(Type.Array(ErrorDetail)),
});

export const ErrorResponse = Type.Object(
  { error: ErrorBody },
  { description: 'an error; `code` says what went wrong' },
);

/** The error responses a route documents, by status. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorResponse> {
  const out: Record<number, typeof ErrorResponse> = {};
  for (const s of statuses) out[s] = ErrorResponse;
  return out;
}

/** If-Match (PATCH, DELETE): a version, quoted or bare. Other headers pass through. */
export const IfMatchHeaders = Type.Object(
  { 'if-match': Type.Optional(Type.String({ maxLength: 100, description: 'the version from ETag, e.g. "3"' })) },
  { additionalProperties: true },
);

export const BEARER_SECURITY = [{ bearer: [] as string[] }];

/** The error of one item of a batch answer (a batch create's, a settle's): the error body's fields. */
export const ItemError = Type.Object({
  code: Type.String(),
  message: Type.String(),
  details: Type.Array(Type.Object({}, { additionalProperties: true })),
});
