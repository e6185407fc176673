/**
 * Writes packages/client/src/wire.ts: the API's wire types, emitted from the very TypeBox schemas
 * that validate and serialise the API (src/api/schemas), and the few facts of the API the client
 * acts on (the status of each error code, the bounds of a batch). The package compiles against
 * that file and imports nothing of the server, so it builds and installs on its own.
 *
 *   npm run generate:client        (after changing a schema; wire-types.test.ts fails until then)
 *
 * The emitter reads a schema as JSON Schema (what TypeBox builds), not as TypeBox's `Static`: it
 * follows what the API validates. It covers what the schemas use: objects (properties, required,
 * additionalProperties, patternProperties), arrays, the primitive types and type lists, const,
 * enum, anyOf / oneOf and allOf. A schema it cannot read stops the generation (a test runs it).
 * A schema of SCHEMAS met inside another one is written as its name.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SMALL_BODY_BYTES_MAX } from '../../../src/api/body-limits.ts';
import * as bulk from '../../../src/api/schemas/bulk.ts';
import * as cluster from '../../../src/api/schemas/cluster.ts';
import * as common from '../../../src/api/schemas/common.ts';
import * as destinations from '../../../src/api/schemas/destinations.ts';
import * as events from '../../../src/api/schemas/events.ts';
import * as forecast from '../../../src/api/schemas/forecast.ts';
import * as health from '../../../src/api/schemas/health.ts';
import * as limits from '../../../src/api/schemas/limits.ts';
import * as pull from '../../../src/api/schemas/pull.ts';
import * as schedules from '../../../src/api/schemas/schedules.ts';
import * as sources from '../../../src/api/schemas/sources.ts';
import * as tenants from '../../../src/api/schemas/tenants.ts';
import { ERROR_STATUS } from '../../../src/core/errors.ts';

export const WIRE_TS_PATH = fileURLToPath(new URL('../src/wire.ts', import.meta.url));
const BIOME = fileURLToPath(new URL('../../../node_modules/.bin/biome', import.meta.url));

/** The schemas the client speaks, each emitted as a type of the same name. */
export const SCHEMAS = {
  // shared pieces, named where they appear
  RetryInput: common.RetryInput,
  RetryOutput: common.RetryOutput,
  DestinationRefOutput: common.DestinationRefOutput,
  ErrorDetail: common.ErrorDetail,
  // events
  EventCreateBody: events.EventCreateBody,
  EventPatchBody: events.EventPatchBody,
  EventJson: events.EventJson,
  EventBatchResponse: events.EventBatchResponse,
  EventListQuery: events.EventListQuery,
  EventListResponse: events.EventListResponse,
  TransitionJson: events.TransitionJson,
  TransitionListQuery: events.TransitionListQuery,
  TransitionListResponse: events.TransitionListResponse,
  // bulk, forecast
  BulkBody: bulk.BulkBody,
  BulkAccepted: bulk.BulkAccepted,
  BulkDryRunResponse: bulk.BulkDryRunResponse,
  BulkJobJson: bulk.BulkJobJson,
  ForecastQuery: forecast.ForecastQuery,
  ForecastResponse: forecast.ForecastResponse,
  // destinations
  HttpDestinationBody: destinations.HttpDestinationBody,
  KafkaDestinationBody: destinations.KafkaDestinationBody,
  NatsDestinationBody: destinations.NatsDestinationBody,
  AmqpDestinationBody: destinations.AmqpDestinationBody,
  RedisDestinationBody: destinations.RedisDestinationBody,
  PullDestinationBody: destinations.PullDestinationBody,
  DestinationPutBody: destinations.DestinationPutBody,
  DestinationJson: destinations.DestinationJson,
  DestinationListResponse: destinations.DestinationListResponse,
  DestinationHealthJson: destinations.DestinationHealthJson,
  SecretRotateBody: destinations.SecretRotateBody,
  SecretRotatedJson: destinations.SecretRotatedJson,
  // schedules
  ScheduleCreateBody: schedules.ScheduleCreateBody,
  SchedulePatchBody: schedules.SchedulePatchBody,
  SchedulePreviewBody: schedules.SchedulePreviewBody,
  SchedulePreviewResponse: schedules.SchedulePreviewResponse,
  ScheduleListQuery: schedules.ScheduleListQuery,
  ScheduleJson: schedules.ScheduleJson,
  ScheduleListResponse: schedules.ScheduleListResponse,
  // sources
  SourcePutBody: sources.SourcePutBody,
  SourceJson: sources.SourceJson,
  SourceListQuery: sources.SourceListQuery,
  SourceListResponse: sources.SourceListResponse,
  // pull
  PullClaimBody: pull.PullClaimBody,
  ClaimedEventJson: pull.ClaimedEventJson,
  PullClaimResponse: pull.PullClaimResponse,
  PullAckBody: pull.PullAckBody,
  PullNackBody: pull.PullNackBody,
  PullSettledJson: pull.PullSettledJson,
  PullSettleBody: pull.PullSettleBody,
  PullSettleResponse: pull.PullSettleResponse,
  PullExtendBody: pull.PullExtendBody,
  PullExtendResponse: pull.PullExtendResponse,
  // tenants, keys, limits
  LimitsJson: limits.LimitsJson,
  TenantCreateBody: tenants.TenantCreateBody,
  TenantCreatedJson: tenants.TenantCreatedJson,
  TenantJson: tenants.TenantJson,
  TenantListResponse: tenants.TenantListResponse,
  TenantPatchBody: tenants.TenantPatchBody,
  TenantDetailJson: tenants.TenantDetailJson,
  TenantSecretRotatedJson: tenants.TenantSecretRotatedJson,
  ApiKeyJson: tenants.ApiKeyJson,
  ApiKeyCreatedJson: tenants.ApiKeyCreatedJson,
  ApiKeyListResponse: tenants.ApiKeyListResponse,
  KeyRotateBody: tenants.KeyRotateBody,
  ApiKeyRotatedJson: tenants.ApiKeyRotatedJson,
  // operations
  HealthResponse: health.HealthResponse,
  ReadyResponse: health.ReadyResponse,
  ClusterResponse: cluster.ClusterResponse,
};

type Json = Record<string, unknown>;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
/** JSON Schema words that say nothing about the type (bounds, formats, documentation). */
const IGNORED = new Set([
  'description',
  'title',
  'pattern',
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'propertyNames',
  'format',
  'default',
  'examples',
  'discriminator',
  'uniqueItems',
  'multipleOf',
]);

class Emitter {
  /** Names by schema JSON: TypeBox copies a schema it wraps (Optional), so identity does not find it. */
  private readonly names = new Map<string, string>();

  constructor(schemas: Record<string, unknown>) {
    for (const [name, schema] of Object.entries(schemas)) {
      const json = JSON.stringify(schema);
      if (!this.names.has(json)) this.names.set(json, name);
    }
  }

  /** The type of `schema`; `top` is the named schema being defined (written out, not by name). */
  type(schema: unknown, indent: string, top = false, at = ''): string {
    if (typeof schema !== 'object' || schema === null) throw new Error(`${at || '/'}: not a schema`);
    const named = top ? undefined : this.names.get(JSON.stringify(schema));
    if (named !== undefined) return named;
    const s = schema as Json;
    for (const key of Object.keys(s)) {
      if (!IGNORED.has(key) && !KNOWN.has(key)) throw new Error(`${at || '/'}: the emitter does not read "${key}"`);
    }
    if ('const' in s) return JSON.stringify(s.const);
    if (Array.isArray(s.enum)) {
      // The API's Nullable(enum) lists the type `null` beside an enum without it: the value may be null.
      const orNull = Array.isArray(s.type) && s.type.includes('null') && !s.enum.includes(null);
      return [...s.enum, ...(orNull ? [null] : [])].map((v) => JSON.stringify(v)).join(' | ');
    }
    const union = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
    if (union) return union.map((m, i) => this.type(m, indent, false, `${at}/anyOf/${i}`)).join(' | ');
    if (Array.isArray(s.allOf)) return s.allOf.map((m, i) => this.member(m, indent, `${at}/allOf/${i}`)).join(' & ');
    if (Array.isArray(s.type)) return s.type.map((t) => this.type({ ...s, type: t }, indent, false, at)).join(' | ');
    switch (s.type) {
      case undefined:
        return 'unknown';
      case 'string':
        return 'string';
      case 'integer':
      case 'number':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'null':
        return 'null';
      case 'array':
        return `${this.member(s.items, indent, `${at}/items`)}[]`;
      case 'object':
        return this.object(s, indent, at);
      default:
        throw new Error(`${at || '/'}: unknown type ${JSON.stringify(s.type)}`);
    }
  }

  /** A member of an intersection, or an array's items: parenthesised when it is a union or intersection. */
  private member(schema: unknown, indent: string, at: string): string {
    const t = this.type(schema, indent, false, at);
    return this.compound(schema) ? `(${t})` : t;
  }

  /** Whether the type of `schema` is written as a union or an intersection. */
  private compound(schema: unknown): boolean {
    const s = schema as Json;
    if (this.names.has(JSON.stringify(s))) return false;
    if ('const' in s) return false;
    const several = (v: unknown) => Array.isArray(v) && v.length > 1;
    if (Array.isArray(s.enum)) return s.enum.length > 1 || several(s.type);
    return several(s.anyOf ?? s.oneOf) || several(s.allOf) || several(s.type);
  }

  private object(s: Json, indent: string, at: string): string {
    const inner = `${indent}  `;
    const lines: string[] = [];
    const required = new Set((s.required as string[] | undefined) ?? []);
    for (const [key, prop] of Object.entries((s.properties as Record<string, Json> | undefined) ?? {})) {
      if (typeof prop.description === 'string') lines.push(...doc(prop.description, inner));
      const name = IDENTIFIER.test(key) ? key : JSON.stringify(key);
      lines.push(`${inner}${name}${required.has(key) ? '' : '?'}: ${this.type(prop, inner, false, `${at}/${key}`)};`);
    }
    const extra: string[] = [];
    if (typeof s.additionalProperties === 'object')
      extra.push(this.type(s.additionalProperties, inner, false, `${at}/additionalProperties`));
    else if (s.additionalProperties === true && lines.length === 0) extra.push('unknown');
    for (const [pattern, value] of Object.entries((s.patternProperties as Record<string, unknown> | undefined) ?? {}))
      extra.push(this.type(value, inner, false, `${at}/patternProperties/${pattern}`));
    if (extra.length > 0) lines.push(`${inner}[key: string]: ${extra.join(' | ')};`);
    if (lines.length === 0) return 'Record<string, never>';
    return `{\n${lines.join('\n')}\n${indent}}`;
  }
}

const KNOWN = new Set([
  'type',
  'const',
  'enum',
  'anyOf',
  'oneOf',
  'allOf',
  'items',
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
]);

/** A JSDoc comment of `text`, one line per line of it, without `*\/` in it. */
function doc(text: string, indent: string): string[] {
  const lines = text.replaceAll('*/', '*\\/').split('\n');
  if (lines.length === 1) return [`${indent}/** ${lines[0]} */`];
  return [`${indent}/**`, ...lines.map((l) => `${indent} * ${l}`.trimEnd()), `${indent} */`];
}

/** The text of src/wire.ts, formatted as the repository's code is (biome). */
export function wireTypesSource(): string {
  return execFileSync(BIOME, ['format', `--stdin-file-path=${WIRE_TS_PATH}`], {
    input: wireTypesText(),
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
}

function wireTypesText(): string {
  const emitter = new Emitter(SCHEMAS);
  const out: string[] = [
    "// Generated by packages/client/scripts/wire-types.ts from the API's schemas (src/api/schemas): do not edit.",
    '// Run `npm run generate:client` after changing a schema; wire-types.test.ts fails while this file is stale.',
    '',
    "/** The HTTP status of each `error.code` of the API (a batch item's error carries only the code). */",
    `export const ERROR_STATUS: Readonly<Record<string, number>> = ${JSON.stringify(ERROR_STATUS, null, 2)};`,
    '',
    '/** The most events `POST /v1/events/batch` takes, whatever the tenant (its batchEventsMax may be lower). */',
    `export const BATCH_EVENTS_CAP = ${batchEventsCap()};`,
    '',
    '/** The smallest body limit of `POST /v1/events/batch` for any tenant (a node may set a lower bodyBytesMax). */',
    `export const BATCH_BODY_BYTES_FLOOR = ${SMALL_BODY_BYTES_MAX};`,
    '',
    "/** The most acks and nacks `POST /v1/events/settle` (or a claim's `ack`) takes. */",
    `export const PULL_SETTLE_ITEMS_MAX = ${pull.PULL_SETTLE_ITEMS_MAX};`,
  ];
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    const description = (schema as unknown as Json).description;
    out.push('');
    if (typeof description === 'string') out.push(...doc(description, ''));
    out.push(`export type ${name} = ${emitter.type(schema, '', true, name)};`);
  }
  out.push('', "/** Every type above by its schema's name (the test compares each with its schema). */");
  out.push('export interface WireTypes {', ...Object.keys(SCHEMAS).map((n) => `  ${n}: ${n};`), '}', '');
  return out.join('\n');
}

function batchEventsCap(): number {
  const max = (events.EventBatchBody as unknown as { properties: { events: { maxItems?: unknown } } }).properties.events
    .maxItems;
  if (typeof max !== 'number') throw new Error('EventBatchBody.events has no maxItems');
  return max;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(WIRE_TS_PATH, wireTypesSource());
  console.log(`wrote ${WIRE_TS_PATH}`);
}
