/** A tiny fetch-based client for Belfry's HTTP API, as the CLI uses it. */
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
  constructor(
    readonly baseUrl: string,
    private readonly key: string,
    private readonly fetchFn: typeof globalThis.fetch,
  ) {}

  /** Builds a client from `--url`/`--key`, falling back to the environment; throws UsageError without a key. */
  static fromFlags(flags: { url?: string; key?: string }, kind: KeyKind, io: Io): ApiClient {
    const baseUrl = (flags.url ?? io.env.BELFRY_URL ?? DEFAULT_URL).replace(/\/+$/, '');
    if (!/^https?:\/\//.test(baseUrl)) throw new UsageError(`--url must start with http:// or https://: ${baseUrl}`);
    const key = flags.key ?? io.env[KEY_ENV[kind]];
    if (!key) throw new UsageError(`no ${kind === 'admin' ? 'admin' : 'API'} key: pass --key or set ${KEY_ENV[kind]}`);
    return new ApiClient(baseUrl, key, io.fetch);
  }

  /** Sends one request; resolves with a 2xx response, rejects with ApiError otherwise. */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, value);
    }
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}`, ...options.headers };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await this.fetchFn(url, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw new Error(`cannot reach Belfry at ${this.baseUrl}: ${describeCause(error)}`);
    }
    const text = await response.text();
    const body = parseJson(text);
    if (response.ok) return { status: response.status, headers: response.headers, body };
    throw toApiError(response.status, body, text);
  }
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

function describeCause(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return `no answer within ${REQUEST_TIMEOUT_MS}ms`;
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
