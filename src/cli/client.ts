/**
 * Belfry's HTTP API as the CLI uses it: the SDK's calls (`call`, @belfry/client's BelfryClient) or,
 * for a path already expanded, its transport (`request`, its Transport, the one HTTP client of the
 * code); one try per call (a command fails at once; a script retries it), its errors told the
 * CLI's way (ApiError, or "cannot reach Belfry at …").
 */
import { BelfryApiError, BelfryClient, Transport, type HttpMethod, type TransportOptions } from '@belfry/client';
import { UsageError, type Io } from './command.ts';

export const DEFAULT_URL = 'http://127.0.0.1:7070';
/** Every request gives up after this long, so a stuck server cannot hang a script. */
export const REQUEST_TIMEOUT_MS = 30_000;
/** Longest non-JSON error body echoed to the user. */
const RAW_ERROR_CHARS_MAX = 500;

/** Which key a command needs: a tenant's API key, or the admin key. */
export type KeyKind = 'tenant' | 'admin';

const KEY_ENV: Record<KeyKind, string> = { tenant: 'BELFRY_API_KEY', admin: 'BELFRY_ADMIN_KEY' };

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

export interface RequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
  query?: Record<string, string | undefined>;
}

/** A non-2xx answer from the API, carrying its `{"error": {code, message, details}}` body. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown[],
  ) {
    super(message);
  }
}

export class ApiClient {
  private readonly transport: Transport;
  /** The SDK on the same options: its methods are the API's operations (client/routes.ts). */
  private readonly sdk: BelfryClient;

  constructor(
    readonly baseUrl: string,
    key: string,
    fetchFn: typeof globalThis.fetch,
  ) {
    const options: TransportOptions = {
      baseUrl,
      apiKey: key,
      fetch: fetchFn,
      timeoutMs: REQUEST_TIMEOUT_MS,
      retry: { attemptsMax: 1 },
      userAgent: 'belfry-cli',
    };
    this.transport = new Transport(options);
    // One command, one request: a create goes at once, alone.
    this.sdk = new BelfryClient({ ...options, batching: false });
  }

  /** Builds a client from `--url`/`--key`, falling back to the environment; throws UsageError without a key. */
  static fromFlags(flags: { url?: string; key?: string }, kind: KeyKind, io: Io): ApiClient {
    const baseUrl = baseUrlOf(flags, io);
    const key = flags.key ?? io.env[KEY_ENV[kind]];
    if (!key) throw new UsageError(`no ${kind === 'admin' ? 'admin' : 'API'} key: pass --key or set ${KEY_ENV[kind]}`);
    return new ApiClient(baseUrl, key, io.fetch);
  }

  /** A client of the routes that need no key (/healthz, /readyz): `--key` is sent if given. */
  static withoutKey(flags: { url?: string; key?: string }, io: Io): ApiClient {
    return new ApiClient(baseUrlOf(flags, io), flags.key ?? '', io.fetch);
  }

  /** Sends one request; resolves with a 2xx response, rejects with ApiError otherwise. */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    // `path` is already expanded (its ids encoded): a route of its own, tried once.
    const route = { method: method as HttpMethod, path, idempotent: false };
    try {
      const res = await this.transport.call<unknown>(route, {
        query: options.query,
        // The transport sends a string as it is (already JSON); the CLI's body is always a value.
        body: typeof options.body === 'string' ? JSON.stringify(options.body) : options.body,
        headers: options.headers,
      });
      // The CLI reads every answer as JSON (undefined when it is not).
      const body = typeof res.body === 'string' ? parseJson(res.body) : res.body;
      return { status: res.status, headers: res.headers, body };
    } catch (error) {
      throw this.cliError(error);
    }
  }

  /**
   * Runs one SDK call (`(sdk) => sdk.destinations.get(name)`), tried once; rejects with ApiError
   * on an error answer, or "cannot reach Belfry at …" when none came, as `request` does.
   */
  async call<T>(operation: (sdk: BelfryClient) => Promise<T>): Promise<T> {
    try {
      return await operation(this.sdk);
    } catch (error) {
      throw this.cliError(error);
    }
  }

  /** The SDK's BelfryApiError told the CLI's way; any other error as it is. */
  private cliError(error: unknown): unknown {
    if (!(error instanceof BelfryApiError)) return error;
    if (error.status === 0) return new Error(`cannot reach Belfry at ${this.baseUrl}: ${describeCause(error)}`);
    // An answer with the API's error body, or (code http_<status>) one without: a proxy's page.
    if (error.code !== `http_${error.status}`)
      return new ApiError(error.status, error.code, error.message, error.details);
    const text = error.body ?? '';
    return toApiError(error.status, parseJson(text), text);
  }
}

/** `--url`, else BELFRY_URL, else the default; throws UsageError on a URL that is not http(s). */
function baseUrlOf(flags: { url?: string }, io: Io): string {
  const baseUrl = (flags.url ?? io.env.BELFRY_URL ?? DEFAULT_URL).replace(/\/+$/, '');
  if (!/^https?:\/\//.test(baseUrl)) throw new UsageError(`--url must start with http:// or https://: ${baseUrl}`);
  return baseUrl;
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function toApiError(status: number, body: unknown, text: string): ApiError {
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | undefined)?.error;
  if (error && typeof error === 'object') {
    return new ApiError(
      status,
      typeof error.code === 'string' ? error.code : 'error',
      typeof error.message === 'string' ? error.message : '',
      Array.isArray(error.details) ? error.details : [],
    );
  }
  return new ApiError(status, 'http_error', text.slice(0, RAW_ERROR_CHARS_MAX).trim(), []);
}

function describeCause(failure: BelfryApiError): string {
  if (failure.code === 'timeout') return `no answer within ${REQUEST_TIMEOUT_MS}ms`;
  // The fetch's own error.
  const error = failure.cause;
  const cause = error instanceof Error ? (error.cause as { code?: string; message?: string } | undefined) : undefined;
  if (cause?.code) return cause.code;
  if (cause?.message) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** Renders an ApiError for a person: status and code, message, then one line per detail. */
export function formatApiError(error: ApiError): string {
  const lines = [`error: ${error.code} (HTTP ${error.status})${error.message ? `: ${error.message}` : ''}`];
  for (const detail of error.details) {
    if (detail && typeof detail === 'object') {
      const { field, message, ...rest } = detail as { field?: unknown; message?: unknown };
      const extra = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : '';
      const where = typeof field === 'string' ? `${field}: ` : '';
      const text = `${where}${typeof message === 'string' ? message : ''}${extra}`.trimEnd();
      // A single-field error often repeats its detail as the message; say it once.
      if (text !== error.message) lines.push(`  - ${text}`);
    } else {
      lines.push(`  - ${String(detail)}`);
    }
  }
  return lines.join('\n');
}
