/**
 * The HTTP webhook channel: one POST of the payload per attempt, Standard Webhooks headers,
 * keep-alive connections pooled per origin in one undici Agent shared by every delivery.
 *
 * Outcomes (deliver() never throws):
 *   2xx                         → delivered (even if reading the rest of the body then fails:
 *                                 the status is the receiver's acknowledgement)
 *   408, 429, 5xx               → retry (429/503 honour Retry-After: seconds or an HTTP-date)
 *   3xx                         → discard: redirects are not followed (a webhook URL that moved
 *                                 is a configuration change, and following it would let a
 *                                 receiver point Belfry at any address)
 *   other 1xx-4xx, unknown      → discard
 *   timeout (connect+headers+body, event.timeoutMs) → retry "timeout after Nms"
 *   network errors (ECONNREFUSED, ECONNRESET, ENOTFOUND, ...) → retry with the error code
 *   caller's signal aborted     → retry "aborted"
 *   invalid URL, header or secret → discard (retrying cannot fix the input)
 *   no signing secret active now → discard: every webhook is signed, never sent unsigned (the
 *                                 reason says to rotate the secret, then replay)
 *   a denied address (private, loopback, link-local, metadata; see core/address.ts), judged on
 *   the address actually connected to → discard "address denied: ..."
 *
 * The response body is always consumed so the connection goes back to the pool: at most
 * `responseBodyBytesMax` is kept for the reason snippet, the rest is drained up to
 * RESPONSE_DRAIN_BYTES_MAX, beyond which the connection is dropped instead.
 */
import { Agent } from 'undici';
import { AddressPolicy } from '../../core/address.ts';
import { SystemClock, type Clock } from '../../core/clock.ts';
import type { Channel, DeliveryOutcome, HttpDueEvent } from '../channel.ts';
import { ADDRESS_DENIED_CODE, guardedConnect, type Resolver } from './guarded-connect.ts';
import { ResponseCollector } from './response-collector.ts';
import { activeSecrets, signPayload } from './signing.ts';
import { onSharedAbort } from '../shared-abort.ts';

export const CONNECTIONS_PER_ORIGIN_DEFAULT = 64;
export const RESPONSE_BODY_BYTES_MAX_DEFAULT = 4096;
export const USER_AGENT_DEFAULT = 'Belfry-Webhooks/0.1';
/** Idle keep-alive sockets close after 4 s: under Node's 5 s server default, so we close first. */
export const KEEP_ALIVE_TIMEOUT_MS = 4_000;
/** Longest response body read to keep a connection reusable; past it the socket is dropped. */
export const RESPONSE_DRAIN_BYTES_MAX = 1024 * 1024;
/** Characters of the response body quoted in an outcome's reason. */
export const REASON_SNIPPET_CHARS_MAX = 200;
/** Bound on a Retry-After the channel passes on: one day. */
export const RETRY_AFTER_MS_MAX = 86_400_000;
/** Used when an event carries no usable timeout; the dispatcher normally always sets one. */
export const TIMEOUT_MS_DEFAULT = 10_000;
export const TIMEOUT_MS_MAX = 300_000;

/** Headers the channel owns: framing and hop-by-hop ones, and the signature set. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-connection',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
]);
/** undici errors that mean the request itself is malformed. */
const INVALID_REQUEST_CODES = new Set([
  'UND_ERR_INVALID_ARG',
  'ERR_INVALID_URL',
  'ERR_INVALID_CHAR',
  'ERR_INVALID_HTTP_TOKEN',
]);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

export interface HttpChannelOptions {
  /** Sockets per origin in the keep-alive pool. Default 64. */
  connectionsPerOrigin?: number;
  /** Response bytes kept for the reason snippet. Default 4096. */
  responseBodyBytesMax?: number;
  userAgent?: string;
  clock?: Clock;
  /**
   * Hosts, addresses and CIDR ranges opened despite the private-address guard (`--allow-hosts`).
   * Default none: every private, loopback, link-local and metadata address is refused.
   */
  allowHosts?: readonly string[];
  /** The whole guard, instead of one built from `allowHosts`. */
  policy?: AddressPolicy;
  /** Host name resolution (default dns.lookup); tests inject one to play DNS rebinding. */
  resolve?: Resolver;
}

/** An outcome before its duration is known. */
export type Verdict = DeliveryOutcome extends infer O ? (O extends unknown ? Omit<O, 'durationMs'> : never) : never;
type Failure = Extract<Verdict, { reason: string }>;

/** Why a delivery none of whose secrets is active now is discarded. */
export const NO_ACTIVE_SECRET = 'no active signing secret (rotate the signing secret, then replay)';

/** Bound on the parsed targets kept (a destination's deliveries share one; inline URLs vary). */
const TARGETS_CACHED_MAX = 1_024;

/** Where to send: the parts of a target URL undici takes, or why it cannot be one. */
type Target = { origin: string; path: string } | string;

export class HttpChannel implements Channel<HttpDueEvent> {
  private readonly agent: Agent;
  private readonly clock: Clock;
  private readonly responseBodyBytesMax: number;
  private readonly userAgent: string;
  private readonly targets = new Map<string, Target>();

  constructor(opts: HttpChannelOptions = {}) {
    this.clock = opts.clock ?? new SystemClock();
    this.responseBodyBytesMax = opts.responseBodyBytesMax ?? RESPONSE_BODY_BYTES_MAX_DEFAULT;
    this.userAgent = opts.userAgent ?? USER_AGENT_DEFAULT;
    this.agent = new Agent({
      connections: opts.connectionsPerOrigin ?? CONNECTIONS_PER_ORIGIN_DEFAULT,
      pipelining: 1,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      // HTTP/1.1 only, as before undici 8 (which offers h2 over TLS by default): a webhook is one
      // POST per connection at a time, and `connectionsPerOrigin` counts those connections.
      allowH2: false,
      connect: guardedConnect({
        policy: opts.policy ?? new AddressPolicy(opts.allowHosts ?? []),
        resolve: opts.resolve,
      }),
    });
  }

  async deliver(event: HttpDueEvent, signal: AbortSignal): Promise<DeliveryOutcome> {
    const startMs = this.clock.monotonicMs();
    let verdict: Verdict;
    try {
      verdict = await this.attempt(event, signal);
    } catch (err) {
      // attempt() handles every foreseeable failure; reaching here is a bug, retried safely.
      verdict = { kind: 'retry', reason: `http channel error: ${errorText(err)}` };
    }
    return { ...verdict, durationMs: Math.max(0, Math.round(this.clock.monotonicMs() - startMs)) };
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private async attempt(event: HttpDueEvent, signal: AbortSignal): Promise<Verdict> {
    const target = this.target(event.target);
    if (typeof target === 'string') return { kind: 'discard', reason: target };
    const headers = this.buildHeaders(event);
    if (typeof headers === 'string') return { kind: 'discard', reason: headers };
    if (signal.aborted) return { kind: 'retry', reason: 'aborted before sending' };

    const timeoutMs = boundTimeoutMs(event.timeoutMs);
    const collector = new ResponseCollector(this.responseBodyBytesMax, RESPONSE_DRAIN_BYTES_MAX);
    let timedOut = false;
    const cancelTimer = this.clock.setTimer(timeoutMs, () => {
      timedOut = true;
      collector.abort(new Error(`timeout after ${timeoutMs}ms`));
    });
    const unfollow = onSharedAbort(signal, (reason) => collector.abort(reason));
    const failed = (err: unknown): Failure => {
      if (timedOut) return { kind: 'retry', reason: `timeout after ${timeoutMs}ms` };
      if (signal.aborted) return { kind: 'retry', reason: 'aborted' };
      return classifyError(err, timeoutMs);
    };
    try {
      try {
        this.agent.dispatch(
          {
            origin: target.origin,
            path: target.path,
            method: 'POST',
            headers,
            body: event.payload,
            // Backstops only: the timer above fires first and covers connect+headers+body.
            headersTimeout: timeoutMs + 1_000,
            bodyTimeout: timeoutMs + 1_000,
          },
          collector,
        );
      } catch (err) {
        collector.fail(err as Error);
      }
      const exchange = await collector.done;
      if (exchange.kind === 'failure') return failed(exchange.error);
      const { status } = exchange;
      let snippet = exchange.snippet;
      if (exchange.bodyError) {
        // The status is the receiver's answer; a 2xx stays delivered even if its body then fails.
        if (status >= 200 && status < 300) return { kind: 'delivered', status };
        snippet = `(body unread: ${failed(exchange.bodyError).reason})`;
      }
      return classifyStatus(status, exchange.headers ?? {}, snippet, this.clock.now());
    } finally {
      cancelTimer();
      unfollow();
    }
  }

  /** The parsed target, from a bounded cache (parsing a URL per delivery cost ~1 µs). */
  private target(text: string): Target {
    let target = this.targets.get(text);
    if (target === undefined) {
      if (this.targets.size >= TARGETS_CACHED_MAX) this.targets.clear();
      const url = parseTarget(text);
      target = typeof url === 'string' ? url : { origin: url.origin, path: url.pathname + url.search };
      this.targets.set(text, target);
    }
    return target;
  }

  /** The request's headers, signed; or why the delivery cannot be sent. */
  private buildHeaders(event: HttpDueEvent): Record<string, string> | string {
    const nowMs = this.clock.now();
    // Judged per delivery, so a rotated-out secret stops signing at its expiry, cache or not.
    const secrets = activeSecrets(event.secrets, nowMs);
    if (secrets.length === 0) return NO_ACTIVE_SECRET;
    const timestampSec = Math.floor(nowMs / 1000);
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': this.userAgent };
    for (const [name, value] of Object.entries(event.headers)) {
      const lower = name.toLowerCase();
      if (!RESERVED_HEADERS.has(lower)) headers[lower] = value;
    }
    if (event.type) headers['belfry-type'] = event.type;
    headers['webhook-id'] = event.id;
    headers['webhook-timestamp'] = String(timestampSec);
    try {
      headers['webhook-signature'] = signPayload({ msgId: event.id, timestampSec, body: event.payload, secrets });
    } catch (err) {
      return `invalid signing secret: ${errorText(err)}`;
    }
    return headers;
  }
}

/** The URL to POST to, or the reason it cannot be one. */
function parseTarget(target: string): URL | string {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return `invalid URL: ${truncate(target, REASON_SNIPPET_CHARS_MAX)}`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `invalid URL: unsupported scheme ${url.protocol}`;
  return url;
}

function boundTimeoutMs(timeoutMs: number): number {
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) return TIMEOUT_MS_DEFAULT;
  return Math.min(Math.ceil(timeoutMs), TIMEOUT_MS_MAX);
}

/** Pure classification of a response; exported for tests. */
export function classifyStatus(
  status: number,
  headers: Record<string, string | string[] | undefined>,
  bodySnippet: string,
  nowMs: number,
): Verdict {
  if (status >= 200 && status < 300) return { kind: 'delivered', status };
  const quoted = bodySnippet.replace(/\s+/g, ' ').trim();
  const detail = quoted ? `: ${truncate(quoted, REASON_SNIPPET_CHARS_MAX)}` : '';
  if (status >= 300 && status < 400) {
    const location = firstHeader(headers.location);
    const to = location ? ` to ${truncate(location, REASON_SNIPPET_CHARS_MAX)}` : '';
    return { kind: 'discard', status, reason: `HTTP ${status}${to}: redirects are not followed` };
  }
  if (status === 408 || status === 429 || (status >= 500 && status < 600)) {
    const verdict: Verdict = { kind: 'retry', status, reason: `HTTP ${status}${detail}` };
    if (status === 429 || status === 503) {
      const retryAfterMs = parseRetryAfterMs(firstHeader(headers['retry-after']), nowMs);
      if (retryAfterMs !== undefined) return { ...verdict, retryAfterMs };
    }
    return verdict;
  }
  return { kind: 'discard', status, reason: `HTTP ${status}${detail}` };
}

/** Retry-After as delay-seconds or an HTTP-date, in ms from `nowMs`, bounded; undefined if absent or bad. */
export function parseRetryAfterMs(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  let ms: number;
  if (/^\d{1,10}$/.test(text)) {
    ms = Number(text) * 1000;
  } else if (/^[A-Za-z]{3}/.test(text)) {
    // All three HTTP-date forms (IMF-fixdate, RFC 850, asctime) start with a day name; this
    // keeps Date.parse from reading "-5" as the year 5 BC.
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = Math.max(0, at - nowMs);
  } else {
    return undefined;
  }
  return Math.min(ms, RETRY_AFTER_MS_MAX);
}

/** Classifies a failure to get a response (the caller has already ruled out timeout and abort). */
function classifyError(err: unknown, timeoutMs: number): Failure {
  const code = errorCode(err);
  if (code === ADDRESS_DENIED_CODE) return { kind: 'discard', reason: `address denied: ${errorText(err)}` };
  if (code && INVALID_REQUEST_CODES.has(code)) return { kind: 'discard', reason: `invalid request: ${errorText(err)}` };
  if (code && TIMEOUT_CODES.has(code)) return { kind: 'retry', reason: `timeout after ${timeoutMs}ms` };
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return { kind: 'retry', reason: 'connect timeout' };
  return { kind: 'retry', reason: code ? `${code}: ${errorText(err)}` : errorText(err) };
}

function errorCode(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_SOCKET') return code;
  }
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message || err.name : String(err);
  return truncate(text, REASON_SNIPPET_CHARS_MAX);
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function truncate(text: string, charsMax: number): string {
  return text.length <= charsMax ? text : text.slice(0, charsMax) + '…';
}
