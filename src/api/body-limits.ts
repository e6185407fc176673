/**
 * Bounds on request bodies, checked before a body is parsed (a preParsing hook, after the caller
 * is authenticated, so a tenant's own limits apply):
 *
 * - per route: 1 MiB for small JSON (destinations, keys, tenants, pull...); a body that carries
 *   one event or schedule template may hold a payload of the tenant's payloadBytesMax plus its
 *   other fields; the batch route holds batchEventsMax events of 4 KiB on average plus one
 *   payload of payloadBytesMax (4.25 MiB with the default limits). All of them stay within the
 *   node's bodyBytesMax. A larger body is answered 413 at once: when Content-Length says so
 *   before a byte of it is read, else (chunked) as soon as the bytes read pass the limit; the
 *   connection is then closed, so the rest is never read;
 * - per node: the bytes of the bodies being received, parsed and handled at once stay within
 *   bodyBytesInFlightMax; past it a request is answered 503 with Retry-After before its body is
 *   read. A body is counted from its first byte (all of Content-Length at once) until its answer
 *   is sent or its connection closes. A body alone is always let in (its route's limit bounds it),
 *   so a budget below a route's limit slows that route down but never shuts it.
 *
 * Parsing itself is done in slices (json-slices.ts), so no body within these bounds holds the
 * event loop for long.
 */
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BelfryError } from '../core/errors.ts';
import { PAYLOAD_BYTES_CAP, type TenantLimits } from '../core/tenant-limits.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The node's budget of request-body bytes in flight (createApp decorates the app with it). */
    bodyBudget: BodyBudget;
  }
}

const KiB = 1024;
const MiB = 1024 * KiB;

/** Bodies of routes that carry no event: destinations, schedules' timing, keys, tenants, pull calls. */
export const SMALL_BODY_BYTES_MAX = 1 * MiB;
/**
 * Room for an event's fields besides its payload: up to 50 headers of 4 KiB, 32 tags, an inline
 * destination, ids.
 */
export const EVENT_FIELDS_BYTES_MAX = 256 * KiB;
/** What a batch may hold per event on average (payload and fields), beyond one payload of payloadBytesMax. */
export const BATCH_EVENT_BYTES = 4 * KiB;
/** The most a batch body may be, whatever a tenant's limits: one event of the largest payload allowed. */
export const BATCH_BODY_BYTES_CAP = PAYLOAD_BYTES_CAP + EVENT_FIELDS_BYTES_MAX;
/** Default of bodyBytesInFlightMax: seven of the largest batches (default limits) at once. */
export const BODY_BYTES_IN_FLIGHT_MAX_DEFAULT = 32 * MiB;
/** The least bodyBytesInFlightMax the config accepts: one small body. */
export const BODY_BYTES_IN_FLIGHT_MAX_MIN = SMALL_BODY_BYTES_MAX;
/** Seconds a client refused by the in-flight budget is told to wait. */
export const BODY_BUDGET_RETRY_AFTER_S = 1;
/**
 * After refusing a body, the answer is followed by the end of the connection, but the socket is
 * destroyed only LINGER_MS later. Meanwhile nothing more is read (the client's writes back up in
 * the socket buffers); a socket destroyed with unread bytes makes the kernel send a reset, and a
 * client still writing would lose the answer it had not read yet.
 */
export const LINGER_MS = 2_000;

export type BodyKind = 'small' | 'event' | 'batch';

/** Routes whose bodies are not small, by method and path pattern. */
const BODY_KINDS = new Map<string, BodyKind>([
  ['POST /v1/events', 'event'],
  ['PATCH /v1/events/:id', 'event'],
  ['POST /v1/schedules', 'event'],
  ['PATCH /v1/schedules/:id', 'event'],
  ['POST /v1/schedules/preview', 'event'],
  ['POST /v1/events/batch', 'batch'],
]);

export function bodyKindOf(method: string, url: string | undefined): BodyKind {
  return (url !== undefined && BODY_KINDS.get(`${method} ${url}`)) || 'small';
}

/** The largest body of a route of `kind` for a tenant with `limits`, within the node's `nodeBytesMax`. */
export function bodyBytesMaxOf(kind: BodyKind, limits: TenantLimits, nodeBytesMax: number): number {
  let bytes: number;
  if (kind === 'event') bytes = Math.max(SMALL_BODY_BYTES_MAX, limits.payloadBytesMax + EVENT_FIELDS_BYTES_MAX);
  else if (kind === 'batch')
    bytes = Math.max(
      SMALL_BODY_BYTES_MAX,
      Math.min(BATCH_BODY_BYTES_CAP, limits.batchEventsMax * BATCH_EVENT_BYTES + limits.payloadBytesMax),
    );
  else bytes = SMALL_BODY_BYTES_MAX;
  return Math.min(bytes, nodeBytesMax);
}

/** Why a route's limit is what it is, for the 413's message. */
function limitReason(kind: BodyKind): string {
  if (kind === 'batch') return `batchEventsMax × ${BATCH_EVENT_BYTES} + payloadBytesMax; split the batch`;
  if (kind === 'event')
    return `payloadBytesMax + ${EVENT_FIELDS_BYTES_MAX} for the other fields, at least ${SMALL_BODY_BYTES_MAX}`;
  return 'the limit of requests that carry no event';
}

export function bodyTooLarge(kind: BodyKind, limitBytes: number, receivedBytes: number | null): BelfryError {
  const size =
    receivedBytes === null ? `more than ${limitBytes} bytes (stopped reading there)` : `${receivedBytes} bytes`;
  return new BelfryError(
    'payload_too_large',
    `request body of ${size}: over the limit of ${limitBytes} bytes for this route (${limitReason(kind)})`,
    [{ field: 'body', message: `at most ${limitBytes} bytes`, limitBytes }],
  );
}

export function bodyBudgetExceeded(budget: BodyBudget): BelfryError {
  const message = `this node is receiving ${budget.bytesInFlight} bytes of request bodies, the most it takes at once (bodyBytesInFlightMax = ${budget.bytesMax} bytes); retry after ${BODY_BUDGET_RETRY_AFTER_S} s`;
  return new BelfryError(
    'unavailable',
    message,
    [
      {
        field: 'body',
        message: 'too many request bodies in flight on this node',
        limit: 'bodyBytesInFlightMax',
        max: budget.bytesMax,
      },
    ],
    {
      'retry-after': String(BODY_BUDGET_RETRY_AFTER_S),
    },
  );
}

/** The node's budget of request-body bytes in flight. */
export class BodyBudget {
  private inFlight = 0;

  constructor(readonly bytesMax: number) {}

  get bytesInFlight(): number {
    return this.inFlight;
  }

  /**
   * Counts `bytes` more for a body that already holds `ownBytes`; false (nothing counted) when
   * that passes the budget and other bodies are in flight.
   */
  tryReserve(bytes: number, ownBytes = 0): boolean {
    if (this.inFlight + bytes > this.bytesMax && this.inFlight > ownBytes) return false;
    this.inFlight += bytes;
    return true;
  }

  release(bytes: number): void {
    this.inFlight -= bytes;
  }
}

/**
 * Counts a chunked body as it arrives: fails with 413 past `limitBytes` and with 503 when the
 * budget refuses more; what it reserved is released by the owner (`reserved`).
 */
class BodyMeter extends Transform {
  reserved = 0;
  /** Read by Fastify's body reader, which checks it against its own bodyLimit too. */
  receivedEncodedLength = 0;

  constructor(
    private readonly kind: BodyKind,
    private readonly limitBytes: number,
    private readonly budget: BodyBudget,
    private readonly onRefuse: () => void,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.receivedEncodedLength += chunk.length;
    if (this.receivedEncodedLength > this.limitBytes)
      return this.refuse(callback, bodyTooLarge(this.kind, this.limitBytes, null));
    if (!this.budget.tryReserve(chunk.length, this.reserved))
      return this.refuse(callback, bodyBudgetExceeded(this.budget));
    this.reserved += chunk.length;
    callback(null, chunk);
  }

  private refuse(callback: TransformCallback, err: Error): void {
    this.onRefuse();
    callback(err);
  }
}

/**
 * Asks for the connection to be closed once the refusal is answered, without reading more of the
 * body (see LINGER_MS). Node's HTTP server calls socket.destroySoon() once an answer with
 * `Connection: close` is written (after it asked the request to dump the rest of its body); this
 * socket's own replaces it.
 */
function closeAfterAnswer(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('connection', 'close');
  const req = request.raw;
  const socket = req.socket;
  socket.destroySoon = function closeUnread() {
    socket.end();
    // Stop reading. Node has just asked the request to dump its body (read and drop it to the
    // end), which resumes the socket over the next ticks: pause it once they have run.
    setImmediate(() => {
      req.pause();
      socket.pause();
    });
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once('close', () => clearTimeout(timer));
  };
}

export interface BodyLimitOptions {
  budget: BodyBudget;
  /** The node's default tenant limits (admin routes have no tenant) and its bound on any body. */
  nodeLimits: TenantLimits & { bodyBytesMax: number };
}

/**
 * The preParsing hook. A refusal also closes the connection after the answer: the client may be
 * sending the rest of a body that will not be read.
 */
export function bodyLimitHook(opts: BodyLimitOptions) {
  const { budget, nodeLimits } = opts;
  return function checkBody(
    request: FastifyRequest,
    reply: FastifyReply,
    payload: Readable,
    done: (err: Error | null, payload?: Readable) => void,
  ): void {
    const lengthHeader = request.headers['content-length'];
    const chunked = lengthHeader === undefined && request.headers['transfer-encoding'] !== undefined;
    if (!chunked && (lengthHeader === undefined || lengthHeader === '0')) return done(null, payload);
    const kind = bodyKindOf(request.method, request.routeOptions.url);
    const limitBytes = bodyBytesMaxOf(kind, request.limits ?? nodeLimits, nodeLimits.bodyBytesMax);
    const refuse = (err: Error) => {
      closeAfterAnswer(request, reply);
      done(err);
    };
    if (!chunked) {
      // Node's HTTP parser accepts only digits here.
      const bytes = Number(lengthHeader);
      if (bytes > limitBytes) return refuse(bodyTooLarge(kind, limitBytes, bytes));
      if (!budget.tryReserve(bytes)) return refuse(bodyBudgetExceeded(budget));
      reply.raw.once('close', () => budget.release(bytes));
      return done(null, payload);
    }
    const meter = new BodyMeter(kind, limitBytes, budget, () => closeAfterAnswer(request, reply));
    reply.raw.once('close', () => budget.release(meter.reserved));
    // Not pipeline(): an error must not destroy the request before the 413 or 503 is sent.
    payload.on('error', (err) => meter.destroy(err));
    payload.pipe(meter);
    done(null, meter);
  };
}
