/**
 * Automatic batching of event creates: concurrent `events.create()` calls go out together as one
 * `POST /v1/events/batch`, and each caller's promise settles with what its own `POST /v1/events`
 * would have given it.
 *
 *   create ──▶ pending batch ──(full, or the pipe idle, or maxDelayMs since its first create)──▶ send
 *   send: one item        ──▶ POST /v1/events (a single create, as without batching)
 *         several items   ──▶ POST /v1/events/batch ──▶ result i settles caller i:
 *                               created / existing ──▶ {event, created}
 *                               error              ──▶ the BelfryApiError a single create gets
 *         refused whole   ──▶ 413 (too large) / batchEventsMax: learn the bound, split, send again
 *                             quota_exceeded: each item as a single create (a repeat of a stored
 *                               id is answered, the others refused, as one by one)
 *                             anything else (after the transport's retries): each caller rejects
 *                               with it, as its single create would have
 *
 * When a batch goes: at once when it holds maxEvents events or its next event would pass the
 * body bound; at the end of the current turn of the event loop when no batch is in flight (the
 * creates made in that turn go together, and a lone create waits for nothing); otherwise when the
 * batch in flight is answered or maxDelayMs after the batch's first create, whichever is first.
 *
 * Idempotent end to end: every event has an id before it is queued (the caller's, or a
 * time-sortable one made here), and its body is serialised once; the batch body is made once
 * from those bytes and the transport sends the same bytes on every try. A batch whose answer was
 * lost (network error, timeout, 503) is sent again by the transport and finds the events the
 * first try made (`existing`, `created: false`), as a single create would. Two creates of one id
 * never share a batch.
 *
 * Bounds: a batch holds at most maxEvents events (≤ BATCH_EVENTS_CAP, lowered to the tenant's
 * batchEventsMax when the node names it) and at most maxBodyBytes (BATCH_BODY_BYTES_FLOOR, the
 * batch route's limit for any tenant, lowered to the node's limit when a 413 names it); an event
 * too large to share a batch goes alone as a single create. The pending batch is flushed before
 * it passes either bound, so what waits is at most one batch.
 */
import type { CreatedEvent } from './client.ts';
import { ROUTES, type ApiErrorDetail, type BelfryEvent, type EventBatchResult } from './routes.ts';
import { BelfryApiError, type Transport } from './transport.ts';
import { BATCH_BODY_BYTES_FLOOR, BATCH_EVENTS_CAP, ERROR_STATUS } from './wire.ts';

export interface BatchingOptions {
  /** The longest a create waits for others to share its request, in ms. Default 2; 0 to 1,000. */
  maxDelayMs?: number;
  /** The most events in one batch request. Default 500; 1 to BATCH_EVENTS_CAP (10,000). */
  maxEvents?: number;
}

export const BATCH_DELAY_MS_DEFAULT = 2;
export const BATCH_DELAY_MS_MAX = 1_000;
export const BATCH_EVENTS_DEFAULT = 500;
/** `{"events":[` and `]}`. */
const ENVELOPE_BYTES = 13;
const ERROR_TEXT_CHARS_MAX = 500;

/** One create waiting for its answer. */
interface Pending {
  id: string;
  /** The create body, serialised once. */
  json: string;
  bytes: number;
  resolve(created: CreatedEvent): void;
  reject(err: unknown): void;
}

/** Checks and completes the options; throws RangeError naming the bad one. */
export function batchingSettings(opts: BatchingOptions): Required<BatchingOptions> {
  const maxDelayMs = opts.maxDelayMs ?? BATCH_DELAY_MS_DEFAULT;
  const maxEvents = opts.maxEvents ?? BATCH_EVENTS_DEFAULT;
  if (typeof maxDelayMs !== 'number' || !(maxDelayMs >= 0 && maxDelayMs <= BATCH_DELAY_MS_MAX))
    throw new RangeError(`batching.maxDelayMs must be a number from 0 to ${BATCH_DELAY_MS_MAX}, got ${maxDelayMs}`);
  if (!Number.isInteger(maxEvents) || maxEvents < 1 || maxEvents > BATCH_EVENTS_CAP)
    throw new RangeError(`batching.maxEvents must be an integer from 1 to ${BATCH_EVENTS_CAP}, got ${maxEvents}`);
  return { maxDelayMs, maxEvents };
}

/**
 * A batch item's error as its single create would have thrown it: the status of its code, and a
 * validation message naming `body` where the batch names `events/<i>`.
 */
export function itemError(
  error: { code: string; message: string; details?: unknown[] },
  index: number,
  attempts: number,
): BelfryApiError {
  const details = (Array.isArray(error.details) ? error.details : []) as ApiErrorDetail[];
  const where = `events/${index}`;
  const message =
    error.code === 'invalid_request' &&
    error.message.startsWith(where) &&
    (error.message[where.length] === ' ' || error.message[where.length] === '/')
      ? `body${error.message.slice(where.length)}`
      : error.message;
  const answer: { code: string; message: string; details?: unknown[] } = { code: error.code, message };
  if (details.length > 0) answer.details = details;
  return new BelfryApiError({
    status: ERROR_STATUS[error.code] ?? 400,
    code: error.code,
    message,
    details,
    attempts,
    body: JSON.stringify({ error: answer }).slice(0, ERROR_TEXT_CHARS_MAX),
  });
}

/** A copy of a whole request's error for one of its callers (each gets its own object). */
function copyError(err: BelfryApiError): BelfryApiError {
  return new BelfryApiError({
    status: err.status,
    code: err.code,
    message: err.message,
    details: err.details,
    attempts: err.attempts,
    retryAfterMs: err.retryAfterMs,
    body: err.body,
    cause: err.cause,
  });
}

/** Coalesces the creates of one client into batch requests. */
export class CreateBatcher {
  private readonly maxDelayMs: number;
  private maxEvents: number;
  private maxBodyBytes = BATCH_BODY_BYTES_FLOOR;
  private pending: Pending[] = [];
  private pendingBytes = ENVELOPE_BYTES;
  private readonly pendingIds = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private immediate: ReturnType<typeof setImmediate> | null = null;
  private inFlight = 0;

  constructor(
    private readonly t: Transport,
    opts: BatchingOptions,
  ) {
    ({ maxDelayMs: this.maxDelayMs, maxEvents: this.maxEvents } = batchingSettings(opts));
  }

  /** Creates the event `body` (which has its id) with the others of its turn; settles as a single create. */
  create(id: string, body: object): Promise<CreatedEvent> {
    const json = JSON.stringify(body);
    const bytes = Buffer.byteLength(json);
    if (ENVELOPE_BYTES + bytes > this.maxBodyBytes) return this.single(json);
    return new Promise<CreatedEvent>((resolve, reject) => {
      if (this.pendingIds.has(id) || this.pendingBytes + bytes + 1 > this.maxBodyBytes) this.flush();
      this.pending.push({ id, json, bytes, resolve, reject });
      this.pendingIds.add(id);
      this.pendingBytes += bytes + 1;
      if (this.pending.length >= this.maxEvents) this.flush();
      else this.schedule();
    });
  }

  private schedule(): void {
    if (this.inFlight === 0) this.immediate ??= setImmediate(() => this.flush());
    else this.timer ??= setTimeout(() => this.flush(), this.maxDelayMs);
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = null;
    this.immediate = null;
    const items = this.pending;
    if (items.length === 0) return;
    this.pending = [];
    this.pendingBytes = ENVELOPE_BYTES;
    this.pendingIds.clear();
    this.inFlight++;
    void this.send(items).finally(() => {
      this.inFlight--;
      // The pipe is idle: what gathered meanwhile goes now (at the end of this turn).
      if (this.inFlight === 0 && this.pending.length > 0 && this.immediate === null) {
        if (this.timer) clearTimeout(this.timer);
        this.timer = null;
        this.immediate = setImmediate(() => this.flush());
      }
    });
  }

  /** Sends `items` and settles each; never rejects. */
  private async send(items: Pending[]): Promise<void> {
    if (items.length === 1) {
      const [item] = items;
      return this.single(item.json).then(item.resolve, item.reject);
    }
    const body = `{"events":[${items.map((i) => i.json).join(',')}]}`;
    let answer: { results: EventBatchResult[] };
    let attempts: number;
    try {
      const res = await this.t.call<{ results: EventBatchResult[] }>(ROUTES.eventBatch, { body });
      answer = res.body;
      attempts = res.attempts;
    } catch (err) {
      return this.refused(items, err);
    }
    const results = answer?.results;
    if (!Array.isArray(results) || results.length !== items.length) {
      const err = new BelfryApiError({
        status: 200,
        code: 'invalid_response',
        message: `POST /v1/events/batch answered ${Array.isArray(results) ? results.length : 'no'} results for ${items.length} events`,
        attempts,
      });
      for (const item of items) item.reject(copyError(err));
      return;
    }
    for (let i = 0; i < items.length; i++) {
      const r = results[i];
      if ((r.status === 'created' || r.status === 'existing') && r.event)
        items[i].resolve({ event: r.event as BelfryEvent, created: r.status === 'created' });
      else if (r.status === 'error' && r.error) items[i].reject(itemError(r.error, i, attempts));
      else
        items[i].reject(
          new BelfryApiError({
            status: 200,
            code: 'invalid_response',
            message: `POST /v1/events/batch answered item ${i} as ${JSON.stringify(r).slice(0, 200)}`,
            attempts,
          }),
        );
    }
  }

  /** The whole batch request failed (after the transport's retries): split, go one by one, or reject each. */
  private async refused(items: Pending[], err: unknown): Promise<void> {
    if (!(err instanceof BelfryApiError)) {
      for (const item of items) item.reject(err);
      return;
    }
    const detail = err.details[0];
    if (err.status === 413) {
      // Refused before it was read: nothing was written. A node with a lower body limit names it.
      const limitBytes = Number(detail?.limitBytes);
      if (Number.isInteger(limitBytes) && limitBytes > 0) this.maxBodyBytes = Math.min(this.maxBodyBytes, limitBytes);
      const half = Math.ceil(items.length / 2);
      await Promise.all([this.sendPacked(items.slice(0, half)), this.sendPacked(items.slice(half))]);
      return;
    }
    if (err.status === 400 && detail?.limit === 'batchEventsMax') {
      // The tenant's batchEventsMax is lower than maxEvents: checked before anything was written.
      const max = Number(detail.max);
      this.maxEvents = Number.isInteger(max) && max >= 1 ? Math.min(this.maxEvents, max) : 1;
      const chunk = Math.min(this.maxEvents, Math.ceil(items.length / 2));
      const sends: Promise<void>[] = [];
      for (let i = 0; i < items.length; i += chunk) sends.push(this.sendPacked(items.slice(i, i + chunk)));
      await Promise.all(sends);
      return;
    }
    if (err.code === 'quota_exceeded') {
      // The batch's new events would pass pendingEventsMax: one by one, some may fit, and a
      // repeat of a stored id is answered (a single create checks the quota only for new ids).
      await Promise.all(items.map((item) => this.single(item.json).then(item.resolve, item.reject)));
      return;
    }
    for (const item of items) item.reject(copyError(err));
  }

  /** Sends `items` in batches within the body bound (an item too large for any goes alone). */
  private async sendPacked(items: Pending[]): Promise<void> {
    const groups: Pending[][] = [];
    let group: Pending[] = [];
    let bytes = ENVELOPE_BYTES;
    for (const item of items) {
      if (group.length > 0 && bytes + item.bytes + 1 > this.maxBodyBytes) {
        groups.push(group);
        group = [];
        bytes = ENVELOPE_BYTES;
      }
      group.push(item);
      bytes += item.bytes + 1;
    }
    if (group.length > 0) groups.push(group);
    await Promise.all(groups.map((g) => this.send(g)));
  }

  /** One event by POST /v1/events, as without batching. */
  private async single(json: string): Promise<CreatedEvent> {
    const res = await this.t.call<BelfryEvent>(ROUTES.eventCreate, { body: json });
    return { event: res.body, created: res.status === 201 };
  }
}
