/**
 * From a schema-valid request body to what the store takes: the checks a JSON Schema cannot
 * express (times, durations, reserved headers, known destinations, payload size). Every check
 * runs before any write, so a rejected request changes nothing.
 */
import type { AddressPolicy } from '../core/address.ts';
import { resolveRetryPolicy, type RetryPolicy } from '../core/backoff.ts';
import { parseDurationMs, parseTimeMs, TIME_MS_MAX } from '../core/duration.ts';
import { BelfryError, invalid } from '../core/errors.ts';
import type { DestinationRef, EventRecord } from '../core/event.ts';
import { canonicalJson, newSortableId, sha256Hex } from '../core/ids.ts';
import { shardOf } from '../core/shard.ts';
import type { DestinationRecord, EventPatch, NewEvent, Store } from '../store/store.ts';
import { overLimit, type TenantLimits } from '../core/tenant-limits.ts';
import type { RetryInputBody } from './schemas/common.ts';
import { checkWebhookUrl } from '../channels/http/index.ts';
import type { EventCreateInput, EventPatchInput } from './schemas/events.ts';

/**
 * Header names a user may not set: hop-by-hop and framing headers the HTTP client owns, and the
 * Standard Webhooks headers Belfry signs with.
 */
const RESERVED_HEADERS = new Set([
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'content-length',
  'content-type',
  'content-encoding',
  'expect',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
]);
const RESERVED_HEADER_PREFIXES = ['webhook-', 'proxy-'];

export interface EventInputContext {
  tenantId: string;
  now: number;
  shardCount: number;
  /** The tenant's limits. */
  limits: TenantLimits;
  /** The private-address guard applied to inline destination URLs. */
  addressPolicy: AddressPolicy;
  /** Resolves a destination name of this tenant; null when none is registered. */
  destination(name: string): Promise<DestinationRecord | null>;
}

/** A per-request memo of destination lookups (a batch names the same few many times). */
export function destinationLookup(
  store: Pick<Store, 'destinationGet'>,
  tenantId: string,
): (name: string) => Promise<DestinationRecord | null> {
  const memo = new Map<string, Promise<DestinationRecord | null>>();
  return (name) => {
    let p = memo.get(name);
    if (!p) {
      p = store.destinationGet({ tenantId, name });
      memo.set(name, p);
    }
    return p;
  };
}

/** Refuses reserved and duplicate names, and values longer than `valueLengthMax` (headerValueLengthMax). */
export function checkHeaders(
  headers: Record<string, string> | undefined,
  valueLengthMax = Infinity,
): Record<string, string> {
  if (!headers) return {};
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(headers)) {
    if (value.length > valueLengthMax)
      throw overLimit('headerValueLengthMax', valueLengthMax, `headers.${name}`, `value of ${value.length} characters`);
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower) || RESERVED_HEADER_PREFIXES.some((p) => lower.startsWith(p)))
      throw invalid(`headers.${name}`, 'is a reserved header that Belfry sets itself');
    if (seen.has(lower)) throw invalid(`headers.${name}`, 'is given twice (header names are case-insensitive)');
    seen.add(lower);
  }
  return { ...headers };
}

/** An inline webhook URL, checked as a registered one is (channels/http: checkWebhookUrl). */
export function checkUrl(field: string, url: string, policy: AddressPolicy): string {
  return checkWebhookUrl(field, url, policy);
}

/** Deepest nesting of objects and arrays a payload may have: bounds every recursive walk of it. */
export const PAYLOAD_DEPTH_MAX = 100;

/**
 * Walks the payload without recursion (a deep one must not overflow the stack: that would be a
 * 500 for client input) and refuses nesting deeper than PAYLOAD_DEPTH_MAX and numbers that JSON
 * parsing turned into ±Infinity (1e999), which JSON.stringify would silently store as null.
 */
export function checkPayloadShape(payload: unknown): void {
  const stack: [unknown, number][] = [[payload, 0]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value === 'number' && !Number.isFinite(value))
      throw invalid('payload', 'has a number out of the range of a double');
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= PAYLOAD_DEPTH_MAX)
      throw invalid('payload', `nests objects and arrays deeper than ${PAYLOAD_DEPTH_MAX} levels`);
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
      else if (typeof child === 'number' && !Number.isFinite(child))
        throw invalid('payload', 'has a number out of the range of a double');
    }
  }
}

/** The payload as JSON text, refused (413) above payloadBytesMax; checkPayloadShape must have passed. */
export function payloadText(payload: unknown, bytesMax: number): string {
  const text = JSON.stringify(payload === undefined ? null : payload);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > bytesMax) throw overLimit('payloadBytesMax', bytesMax, 'payload', `${bytes} bytes`);
  return text;
}

/** Refuses a due time further ahead of now than the tenant's scheduleAheadMax. */
export function checkAhead(ctx: EventInputContext, fireAt: number, field: string): void {
  const aheadMs = fireAt - ctx.now;
  if (aheadMs > ctx.limits.scheduleAheadMsMax)
    throw overLimit('scheduleAheadMsMax', ctx.limits.scheduleAheadMsMax, field, 'due too far ahead');
}

/** Refuses an id or group longer than the tenant's idLengthMax (the schema allows up to 200). */
export function checkIdLength(ctx: EventInputContext, field: string, id: string | undefined): void {
  if (id !== undefined && id.length > ctx.limits.idLengthMax)
    throw overLimit('idLengthMax', ctx.limits.idLengthMax, field, `${id.length} characters`);
}

export async function resolveDestination(
  ctx: EventInputContext,
  input: string | { url: string },
): Promise<{ ref: DestinationRef; record: DestinationRecord | null }> {
  if (typeof input === 'object')
    return { ref: { url: checkUrl('destination.url', input.url, ctx.addressPolicy) }, record: null };
  const record = await ctx.destination(input);
  if (!record)
    throw invalid('destination', `no destination named "${input}"; create it with PUT /v1/destinations/${input}`);
  return { ref: { name: input }, record };
}

/** fireAt from `fireAt` or from now + `delay`; null when neither is given. */
export function resolveFireAt(
  now: number,
  fireAt: string | number | undefined,
  delay: string | number | undefined,
): number | null {
  if (fireAt !== undefined && delay !== undefined) throw invalid('delay', 'give either fireAt or delay, not both');
  if (fireAt !== undefined) {
    const ms = parseTimeMs(fireAt);
    if (ms === null)
      throw invalid(
        'fireAt',
        'must be an RFC 3339 time with a zone (2026-11-22T10:21:55Z) or epoch milliseconds, in years 2000 to 9999',
      );
    return ms;
  }
  if (delay !== undefined) {
    const ms = parseDurationMs(delay);
    if (ms === null)
      throw invalid('delay', 'must be a duration such as "30s", "5m", "4h", "7d" or milliseconds, at most 10 years');
    return Math.min(now + ms, TIME_MS_MAX);
  }
  return null;
}

export function parseDurationField(field: string, value: string | number): number {
  const ms = parseDurationMs(value);
  if (ms === null) throw invalid(field, 'must be a duration such as "250ms", "30s", "5m", "4h", "7d" or milliseconds');
  return ms;
}

/** The policy, merged over `base`; RangeErrors from resolveRetryPolicy become 400s naming the field. */
export function resolveRetry(input: RetryInputBody | undefined, base?: RetryPolicy): RetryPolicy | null {
  if (input === undefined) return null;
  try {
    return resolveRetryPolicy(input, base);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    const sep = err.message.indexOf(':');
    const field = sep > 0 ? err.message.slice(0, sep) : 'retry';
    throw invalid(field, sep > 0 ? err.message.slice(sep + 1).trim() : err.message);
  }
}

/** A create body as a NewEvent; throws a BelfryError for the first thing wrong. */
export async function toNewEvent(ctx: EventInputContext, body: EventCreateInput): Promise<NewEvent> {
  checkIdLength(ctx, 'id', body.id);
  checkIdLength(ctx, 'group', body.group);
  // First: the request hash and the payload text walk the payload recursively.
  checkPayloadShape(body.payload);
  const fireAt = resolveFireAt(ctx.now, body.fireAt, body.delay) ?? ctx.now;
  checkAhead(ctx, fireAt, body.delay !== undefined ? 'delay' : 'fireAt');
  const { ref, record } = await resolveDestination(ctx, body.destination);
  const headers = checkHeaders(body.headers, ctx.limits.headerValueLengthMax);
  const retry = resolveRetry(body.retry, record?.config.retry ?? undefined);
  const expireAt =
    body.expireAfter === undefined
      ? null
      : Math.min(fireAt + parseDurationField('expireAfter', body.expireAfter), TIME_MS_MAX);
  const payload = payloadText(body.payload, ctx.limits.payloadBytesMax);
  const id = body.id ?? newSortableId(ctx.now);
  const group = body.group ?? null;
  return {
    tenantId: ctx.tenantId,
    id,
    shard: shardOf(ctx.tenantId, group ?? id, ctx.shardCount),
    fireAt,
    destination: ref,
    payload,
    headers,
    group,
    retry,
    expireAt,
    tags: body.tags ? { ...body.tags } : {},
    type: body.type ?? null,
    // Only a client-chosen id can be sent again; an event Belfry named needs no idempotency hash
    // (measured: canonical JSON + SHA-256 was ~8 % of a batch insert's CPU).
    requestHash: body.id === undefined ? '' : sha256Hex(canonicalJson(body)),
  };
}

/**
 * A PATCH body as an EventPatch against the event as read. A new fireAt keeps the event's
 * expiry window (expireAt - fireAt). The request hash changes, so repeating the original create
 * now answers 409: the stored event no longer matches that body.
 */
export async function toEventPatch(
  ctx: EventInputContext,
  current: EventRecord,
  body: EventPatchInput,
): Promise<EventPatch> {
  checkPayloadShape(body.payload);
  const patch: EventPatch = {};
  const fireAt = resolveFireAt(ctx.now, body.fireAt, body.delay);
  if (fireAt !== null) {
    checkAhead(ctx, fireAt, body.delay !== undefined ? 'delay' : 'fireAt');
    patch.fireAt = fireAt;
    if (current.expireAt !== null)
      patch.expireAt = Math.min(fireAt + Math.max(0, current.expireAt - current.fireAt), TIME_MS_MAX);
  }
  if (body.destination !== undefined) patch.destination = (await resolveDestination(ctx, body.destination)).ref;
  if (body.headers !== undefined) patch.headers = checkHeaders(body.headers, ctx.limits.headerValueLengthMax);
  if (body.payload !== undefined) patch.payload = payloadText(body.payload, ctx.limits.payloadBytesMax);
  if (body.type !== undefined) patch.type = body.type;
  patch.requestHash = sha256Hex(`patched:${current.requestHash}:${canonicalJson(body)}`);
  return patch;
}
