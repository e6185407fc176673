/**
 * One HTTP call to a Belfry node, with the client's retry rules and typed errors.
 *
 * Retry rules (each bounded by `attemptsMax` tries and `waitMsMax` of total waiting):
 *   429                      → retried for every route: the API refuses it before doing anything
 *   503                      → retried when the route is idempotent (the store may have been cut
 *                              off mid-write; a second try of a non-idempotent POST could act twice)
 *   network error / timeout  → retried when the route is idempotent
 * The wait is the response's Retry-After (seconds or an HTTP date) when it gives one, otherwise
 * an exponential backoff with full jitter. A Retry-After longer than the wait left ends the
 * retries at once with the error: waiting part of it would only be refused again.
 */
import type { ApiErrorDetail, Route } from './routes.ts';

export interface RetryOptions {
  /** Tries of one call, the first included. Default 5. */
  attemptsMax?: number;
  /** Total time one call may spend waiting between tries. Default 30 s. */
  waitMsMax?: number;
  /** Backoff when no Retry-After is given: full jitter in [0, min(max, min × 2^retry)]. Defaults 100 ms and 5 s. */
  backoffMsMin?: number;
  backoffMsMax?: number;
}

export interface TransportOptions {
  /** The node's base URL, e.g. `http://127.0.0.1:7070`. */
  baseUrl: string;
  /** A tenant's API key (`bk_...`) or, for the admin calls, the admin key. */
  apiKey: string;
  /** Per try; default 30 s. */
  timeoutMs?: number;
  retry?: RetryOptions;
  /** Default: the global (Node's built-in, undici) fetch. */
  fetch?: typeof fetch;
  /** How the client waits between tries; tests pass one that records the waits. */
  sleep?: (ms: number) => Promise<void>;
  /** Random in [0, 1) for the jitter. */
  random?: () => number;
  /** Default `belfry-client`. */
  userAgent?: string;
}

export const ATTEMPTS_MAX_DEFAULT = 5;
export const WAIT_MS_MAX_DEFAULT = 30_000;
export const TIMEOUT_MS_DEFAULT = 30_000;
const BACKOFF_MS_MIN_DEFAULT = 100;
const USER_AGENT_DEFAULT = 'belfry-client';
const BACKOFF_MS_MAX_DEFAULT = 5_000;
/** Bound on the bytes of an error body kept in a message. */
const ERROR_TEXT_CHARS_MAX = 500;

/**
 * Every failure of a call: an error response from the API (`status` and the API's `error.code`,
 * message and details), or no response at all (`status` 0, `code` `network_error` or `timeout`,
 * the underlying error as `cause`).
 */
export class BelfryApiError extends Error {
  override readonly name = 'BelfryApiError';
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  /** The API's `error.code` (`not_found`, `conflict`, `rate_limited`, ...), `http_<status>` for an answer without one, or `network_error` / `timeout`. */
  readonly code: string;
  readonly details: ApiErrorDetail[];
  /** The tries made, the last one included. */
  readonly attempts: number;
  /** Retry-After of the last answer, in ms, when it gave one. */
  readonly retryAfterMs: number | undefined;
  /** The last answer's body text (at most 500 characters), when there was one. */
  readonly body: string | undefined;

  constructor(init: {
    status: number;
    code: string;
    message: string;
    details?: ApiErrorDetail[];
    attempts?: number;
    retryAfterMs?: number;
    body?: string;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? [];
    this.attempts = init.attempts ?? 1;
    this.retryAfterMs = init.retryAfterMs;
    this.body = init.body;
  }
}

export interface CallInput {
  params?: Record<string, string>;
  query?: Record<string, string | number | Date | undefined>;
  /** Sent as JSON; a string is sent as it is (already JSON). */
  body?: unknown;
  headers?: Record<string, string>;
  /** Aborts the call (and its retries): it then fails as a network error. */
  signal?: AbortSignal;
}

export interface CallResult<T> {
  status: number;
  body: T;
  headers: Headers;
  attempts: number;
}

/** Seconds, or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfterMs(value: string | null, nowMs: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d{1,9}$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** `/v1/events/{id}` + {id: 'a b'} → `/v1/events/a%20b`. */
export function expandPath(path: string, params: Record<string, string> = {}): string {
  return path.replace(/\{([A-Za-z]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined || value === '') throw new TypeError(`missing path parameter ${name} of ${path}`);
    return encodeURIComponent(value);
  });
}

function queryString(query: CallInput['query']): string {
  if (!query) return '';
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    search.set(name, value instanceof Date ? value.toISOString() : String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

interface Failure {
  error: BelfryApiError;
  /** The server's own wait, when it gave one. */
  retryAfterMs?: number;
  retryable: boolean;
}

async function errorFromResponse(res: Response, route: Route, attempt: number): Promise<Failure> {
  const text = await res.text().catch(() => '');
  const retryAfterMs = parseRetryAfterMs(res.headers.get('retry-after'), Date.now());
  let code = `http_${res.status}`;
  let message = text.slice(0, ERROR_TEXT_CHARS_MAX) || res.statusText || `HTTP ${res.status}`;
  let details: ApiErrorDetail[] = [];
  try {
    const parsed = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
    if (parsed.error && typeof parsed.error.code === 'string') {
      code = parsed.error.code;
      if (typeof parsed.error.message === 'string') message = parsed.error.message;
      if (Array.isArray(parsed.error.details)) details = parsed.error.details as ApiErrorDetail[];
    }
  } catch {
    // not JSON (a proxy's page): the text is the message
  }
  const retryable = res.status === 429 || (res.status === 503 && route.idempotent);
  const error = new BelfryApiError({
    status: res.status,
    code,
    message,
    details,
    attempts: attempt,
    retryAfterMs,
    body: text.slice(0, ERROR_TEXT_CHARS_MAX),
  });
  return { error, retryAfterMs, retryable };
}

/** Sends calls to one node for one key. */
export class Transport {
  private readonly baseUrl: string;
  private readonly fetchFn: typeof fetch;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly attemptsMax: number;
  private readonly waitMsMax: number;
  private readonly backoffMsMin: number;
  private readonly backoffMsMax: number;
  private readonly timeoutMs: number;

  constructor(private readonly options: TransportOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchFn = options.fetch ?? fetch;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.random = options.random ?? Math.random;
    this.attemptsMax = Math.max(1, Math.floor(options.retry?.attemptsMax ?? ATTEMPTS_MAX_DEFAULT));
    this.waitMsMax = Math.max(0, options.retry?.waitMsMax ?? WAIT_MS_MAX_DEFAULT);
    this.backoffMsMin = options.retry?.backoffMsMin ?? BACKOFF_MS_MIN_DEFAULT;
    this.backoffMsMax = options.retry?.backoffMsMax ?? BACKOFF_MS_MAX_DEFAULT;
    this.timeoutMs = options.timeoutMs ?? TIMEOUT_MS_DEFAULT;
  }

  /** Makes the call, retrying as the header says; resolves with a 2xx, throws BelfryApiError otherwise. */
  async call<T>(route: Route, input: CallInput = {}): Promise<CallResult<T>> {
    const url = this.baseUrl + expandPath(route.path, input.params) + queryString(input.query);
    // Serialised once: every try sends the same bytes, so an idempotent create hashes the same.
    const body =
      input.body === undefined ? undefined : typeof input.body === 'string' ? input.body : JSON.stringify(input.body);
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}`, ...input.headers };
    if (body !== undefined) headers['content-type'] = 'application/json';
    headers['user-agent'] = this.options.userAgent ?? USER_AGENT_DEFAULT;

    let waitedMs = 0;
    for (let attempt = 1; ; attempt++) {
      const failure = await this.tryOnce<T>(route, url, headers, body, attempt, input.signal);
      if (!('error' in failure)) return failure;
      if (!failure.retryable || attempt >= this.attemptsMax || input.signal?.aborted) throw failure.error;
      const waitMs = failure.retryAfterMs ?? this.backoffMs(attempt);
      if (waitedMs + waitMs > this.waitMsMax) throw failure.error;
      waitedMs += waitMs;
      await this.sleep(waitMs);
    }
  }

  private async tryOnce<T>(
    route: Route,
    url: string,
    headers: Record<string, string>,
    body: string | undefined,
    attempt: number,
    callSignal?: AbortSignal,
  ): Promise<CallResult<T> | Failure> {
    let res: Response;
    try {
      const timeout = AbortSignal.timeout(this.timeoutMs);
      const signal = callSignal ? AbortSignal.any([timeout, callSignal]) : timeout;
      res = await this.fetchFn(url, { method: route.method, headers, body, signal });
    } catch (err) {
      const timedOut = err instanceof DOMException && err.name === 'TimeoutError';
      const code = timedOut ? 'timeout' : 'network_error';
      const message = timedOut
        ? `no response within ${this.timeoutMs} ms`
        : `${route.method} ${route.path}: ${(err as Error).message}`;
      return {
        error: new BelfryApiError({ status: 0, code, message, attempts: attempt, cause: err }),
        retryable: route.idempotent,
      };
    }
    if (res.status >= 400) return errorFromResponse(res, route, attempt);
    try {
      const type = res.headers.get('content-type') ?? '';
      const text = await res.text();
      const parsed = text.length === 0 ? undefined : type.includes('json') ? JSON.parse(text) : text;
      return { status: res.status, body: parsed as T, headers: res.headers, attempts: attempt };
    } catch (err) {
      // The response was cut off after its status: the call's outcome is unknown, as for a network error.
      const message = `${route.method} ${route.path}: ${(err as Error).message}`;
      return {
        error: new BelfryApiError({ status: 0, code: 'network_error', message, attempts: attempt, cause: err }),
        retryable: route.idempotent,
      };
    }
  }

  private backoffMs(retry: number): number {
    const ceiling = Math.min(this.backoffMsMax, this.backoffMsMin * 2 ** Math.min(retry - 1, 30));
    return Math.floor(this.random() * ceiling);
  }
}
