/** Retry policy and exponential backoff with jitter: pure functions, randomness passed in. */
import { parseDurationMs } from './duration.ts';

export interface RetryPolicy {
  /** Total delivery attempts, the first included. */
  maxAttempts: number;
  minBackoffMs: number;
  maxBackoffMs: number;
  coefficient: number;
}

/** Bounds on every retry policy: no event retries forever or waits longer than a week per step. */
export const RETRY_ATTEMPTS_MAX = 100;
export const RETRY_BACKOFF_MS_MAX = 7 * 86_400_000;

export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 12,
  minBackoffMs: 1_000,
  maxBackoffMs: 3_600_000,
  coefficient: 2,
};

/** The policy as the API shows it: durations as strings. */
export interface RetryPolicyInput {
  maxAttempts?: number;
  minBackoff?: string | number;
  maxBackoff?: string | number;
  coefficient?: number;
}

/** Merges a partial user policy over `base`. Throws RangeError naming the bad field. */
export function resolveRetryPolicy(
  input: RetryPolicyInput | undefined | null,
  base: RetryPolicy = DEFAULT_RETRY,
): RetryPolicy {
  if (!input) return base;
  const out: RetryPolicy = { ...base };
  if (input.maxAttempts !== undefined) out.maxAttempts = input.maxAttempts;
  if (input.minBackoff !== undefined) {
    const ms = parseDurationMs(input.minBackoff);
    if (ms === null) throw new RangeError('retry.minBackoff: not a duration');
    out.minBackoffMs = ms;
  }
  if (input.maxBackoff !== undefined) {
    const ms = parseDurationMs(input.maxBackoff);
    if (ms === null) throw new RangeError('retry.maxBackoff: not a duration');
    out.maxBackoffMs = ms;
  }
  if (input.coefficient !== undefined) out.coefficient = input.coefficient;
  if (!Number.isInteger(out.maxAttempts) || out.maxAttempts < 1 || out.maxAttempts > RETRY_ATTEMPTS_MAX)
    throw new RangeError(`retry.maxAttempts: must be an integer from 1 to ${RETRY_ATTEMPTS_MAX}`);
  if (out.maxBackoffMs > RETRY_BACKOFF_MS_MAX) throw new RangeError('retry.maxBackoff: at most 7d');
  if (out.minBackoffMs > out.maxBackoffMs) throw new RangeError('retry.minBackoff: must not exceed maxBackoff');
  if (!(out.coefficient >= 1 && out.coefficient <= 10)) throw new RangeError('retry.coefficient: must be from 1 to 10');
  return out;
}

/**
 * Delay before attempt `attempt + 1`, after `attempt` failed attempts (attempt ≥ 1).
 * Exponential (min · coefficient^(attempt-1)), capped at max, then "equal jitter": a uniform
 * draw in [delay/2, delay], so retries of many events spread out but never come sooner than half.
 * `random` returns [0, 1). A server's Retry-After raises the delay (never lowers it), capped at the global bound.
 */
export function backoffDelayMs(
  policy: RetryPolicy,
  attempt: number,
  random: () => number,
  retryAfterMs?: number,
): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 64);
  const raw = Math.min(policy.maxBackoffMs, policy.minBackoffMs * Math.pow(policy.coefficient, exponent));
  const jittered = Math.floor(raw / 2 + random() * (raw / 2));
  return Math.min(Math.max(jittered, retryAfterMs ?? 0), RETRY_BACKOFF_MS_MAX);
}
