/**
 * Per-tenant limits: what each one protects, its default (a node setting) and the bounds a
 * per-tenant override must stay within. One table drives the node's config flags, the admin
 * API's validation, the OpenAPI document and the error a request over a limit gets, so they
 * cannot disagree.
 *
 * Every limit is checked before anything is written: a request over a limit changes nothing.
 */
import { DURATION_MS_MAX, formatDuration, parseDurationMs } from './duration.ts';
import { BelfryError, type ErrorCode } from './errors.ts';
import { overridesOf, type StoredSettings } from './tenant-settings.ts';

export interface TenantLimits {
  /** Bytes of one event's payload (as JSON text). */
  payloadBytesMax: number;
  /** Events in one POST /v1/events/batch. */
  batchEventsMax: number;
  /** Events not yet finished (scheduled, executing, awaiting_retry). */
  pendingEventsMax: number;
  /** Scheduling requests (create, batch, edit, replay) per second, per node. */
  scheduleRequestsPerSecond: number;
  /** How far ahead of now an event may be due. */
  scheduleAheadMsMax: number;
  /** Characters of an event id or group. */
  idLengthMax: number;
  /** Characters of one header value (event or destination headers). */
  headerValueLengthMax: number;
  /** Registered destinations. */
  destinationsMax: number;
}

export type LimitName = keyof TenantLimits;

/** How a limit is written in JSON, flags and messages. */
export type LimitKind = 'count' | 'bytes' | 'rate' | 'duration';

export interface LimitSpec {
  key: LimitName;
  /** The name in the API, the config file and error details (`scheduleAheadMax` is a duration there). */
  name: string;
  kind: LimitKind;
  default: number;
  min: number;
  /** The largest per-tenant value accepted. */
  max: number;
  /** What the limit protects, for the OpenAPI document and docs/security.md. */
  protects: string;
  /** The status and code of a request over it. */
  code: ErrorCode;
}

/** The largest id the schemas accept; a tenant's idLengthMax may only lower it. */
export const ID_LENGTH_CAP = 200;
/** The largest header value the schemas accept; a tenant's headerValueLengthMax may only lower it. */
export const HEADER_VALUE_LENGTH_CAP = 4096;
/** The largest batch the schema accepts; a tenant's batchEventsMax may only lower it. */
export const BATCH_EVENTS_CAP = 10_000;
/** The largest payload a tenant may be allowed; the request body bound is far above it. */
export const PAYLOAD_BYTES_CAP = 16 * 1024 * 1024;

export const LIMIT_SPECS: readonly LimitSpec[] = [
  {
    key: 'payloadBytesMax',
    name: 'payloadBytesMax',
    kind: 'bytes',
    default: 256 * 1024,
    min: 1,
    max: PAYLOAD_BYTES_CAP,
    protects: 'store size and delivery memory per event',
    code: 'payload_too_large',
  },
  {
    key: 'batchEventsMax',
    name: 'batchEventsMax',
    kind: 'count',
    default: 1_000,
    min: 1,
    max: BATCH_EVENTS_CAP,
    protects: 'the length of one transaction and of one request',
    code: 'invalid_request',
  },
  {
    key: 'pendingEventsMax',
    name: 'pendingEventsMax',
    kind: 'count',
    default: 20_000_000,
    min: 0,
    max: 1_000_000_000,
    protects: "the store and every other tenant's share of it from one tenant's backlog",
    code: 'quota_exceeded',
  },
  {
    key: 'scheduleRequestsPerSecond',
    name: 'scheduleRequestsPerSecond',
    kind: 'rate',
    default: 25_000,
    min: 1,
    max: 1_000_000,
    protects: "each node's CPU and write throughput from one tenant's burst (429 with Retry-After)",
    code: 'rate_limited',
  },
  {
    key: 'scheduleAheadMsMax',
    name: 'scheduleAheadMax',
    kind: 'duration',
    default: DURATION_MS_MAX,
    min: 1_000,
    max: DURATION_MS_MAX,
    protects: 'the store from events that would sit in it for decades',
    code: 'invalid_request',
  },
  {
    key: 'idLengthMax',
    name: 'idLengthMax',
    kind: 'count',
    default: ID_LENGTH_CAP,
    min: 1,
    max: ID_LENGTH_CAP,
    protects: 'index size; ids are also URL path segments and log fields',
    code: 'invalid_request',
  },
  {
    key: 'headerValueLengthMax',
    name: 'headerValueLengthMax',
    kind: 'count',
    default: HEADER_VALUE_LENGTH_CAP,
    min: 1,
    max: HEADER_VALUE_LENGTH_CAP,
    protects: "receivers' header buffers and the size of every delivery",
    code: 'invalid_request',
  },
  {
    key: 'destinationsMax',
    name: 'destinationsMax',
    kind: 'count',
    default: 1_000,
    min: 0,
    max: 100_000,
    protects: 'virtual queues (memory and sockets) per node',
    code: 'quota_exceeded',
  },
];

export const DEFAULT_TENANT_LIMITS: TenantLimits = Object.fromEntries(
  LIMIT_SPECS.map((s) => [s.key, s.default]),
) as unknown as TenantLimits;

export function limitSpec(key: LimitName): LimitSpec {
  return LIMIT_SPECS.find((s) => s.key === key)!;
}

/** A limit's value as written in JSON: a duration string for durations, else the number. */
export function limitJsonValue(spec: LimitSpec, value: number): number | string {
  return spec.kind === 'duration' ? formatDuration(value) : value;
}

/** `256 KiB`, `30d`, `1000/s`: a value as a person reads it in a message. */
export function formatLimit(spec: LimitSpec, value: number): string {
  switch (spec.kind) {
    case 'bytes':
      return `${value} bytes`;
    case 'duration':
      return formatDuration(value);
    case 'rate':
      return `${value} per second`;
    case 'count':
      return String(value);
  }
}

/**
 * Reads one limit from JSON or config text (a number, numeric text, or a duration for
 * durations); null when it is not a valid value within the spec's bounds.
 */
export function parseLimitValue(spec: LimitSpec, raw: unknown): number | null {
  let n: number | null;
  if (spec.kind === 'duration') n = parseDurationMs(raw);
  else if (typeof raw === 'number') n = raw;
  else if (typeof raw === 'string' && /^\d{1,15}$/.test(raw)) n = Number(raw);
  else n = null;
  if (n === null || !Number.isInteger(n) || n < spec.min || n > spec.max) return null;
  return n;
}

/** The bounds of a limit as a sentence fragment: "from 1 to 16777216 bytes". */
export function limitBounds(spec: LimitSpec): string {
  return `from ${formatLimit(spec, spec.min)} to ${formatLimit(spec, spec.max)}`;
}

/**
 * The tenant's limits: its stored overrides (`settings.limits`, by JSON name) over the node's
 * defaults. An override that is no longer valid (stored by an older version) is ignored.
 */
export function resolveTenantLimits(defaults: TenantLimits, settings: StoredSettings): TenantLimits {
  if (typeof settings?.limits !== 'object' || settings.limits === null) return defaults;
  const overrides = overridesOf(settings, 'limits');
  const out: TenantLimits = { ...defaults };
  for (const spec of LIMIT_SPECS) {
    const value = parseLimitValue(spec, overrides[spec.name]);
    if (value !== null) out[spec.key] = value;
  }
  return out;
}

/** The limits as the API shows them (JSON names; durations as strings). */
export function limitsJson(limits: TenantLimits): Record<string, number | string> {
  return Object.fromEntries(LIMIT_SPECS.map((s) => [s.name, limitJsonValue(s, limits[s.key])]));
}

/**
 * The error of a request over `key`: the spec's status and code, a message that names the
 * limit and its value, and `{limit, max}` in the details so a client can act on it.
 */
export function overLimit(
  key: LimitName,
  value: number,
  field: string,
  what: string,
  headers: Record<string, string> = {},
): BelfryError {
  const spec = limitSpec(key);
  const message = `${what}: over the limit ${spec.name} = ${formatLimit(spec, value)}`;
  return new BelfryError(
    spec.code,
    field ? `${field}: ${message}` : message,
    [{ field: field || undefined, message, limit: spec.name, max: limitJsonValue(spec, value) }],
    headers,
  );
}
