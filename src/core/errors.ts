/** Typed errors that the API maps to responses in one place. */

export type ErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'precondition_failed'
  /** An event made as many changes as its trace holds (edits and replays are refused; a cancel applies). */
  | 'too_many_changes'
  | 'payload_too_large'
  | 'rate_limited'
  | 'quota_exceeded'
  | 'unavailable'
  | 'internal';

/** The HTTP status of each code (the SDK's generated wire types carry it: a batch item's error names only its code). */
export const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  precondition_failed: 412,
  too_many_changes: 409,
  payload_too_large: 413,
  rate_limited: 429,
  /** A tenant quota (pending events, destinations) is used up; waiting a second does not help. */
  quota_exceeded: 403,
  unavailable: 503,
  internal: 500,
};

export interface ErrorDetail {
  field?: string;
  message: string;
  [key: string]: unknown;
}

export class BelfryError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetail[] = [],
    /** Response headers that go with the error (Retry-After on a 429). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'BelfryError';
    this.status = ERROR_STATUS[code];
  }
}

export function invalid(field: string, message: string): BelfryError {
  return new BelfryError('invalid_request', `${field}: ${message}`, [{ field, message }]);
}
