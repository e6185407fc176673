/**
 * What a delivery outcome does to an event: the decision half of the state machine, pure, with
 * randomness passed in so tests can pin the jitter.
 *
 *   delivered ──▶ succeeded
 *   discard   ──▶ discarded
 *   retry     ──▶ awaiting_retry at now + backoff   (attempts < maxAttempts and before expireAt)
 *             ──▶ archived                          (attempts exhausted, or the retry would fall after expireAt)
 */
import { backoffDelayMs, type RetryPolicy } from '../core/backoff.ts';
import type { DeliveryOutcome } from '../channels/channel.ts';

export interface NextState {
  to: 'succeeded' | 'discarded' | 'awaiting_retry' | 'archived';
  retryAt?: number;
  error?: string;
}

export function decideNext(params: {
  outcome: DeliveryOutcome;
  /** Attempts made so far, this one included. */
  attempts: number;
  policy: RetryPolicy;
  expireAt: number | null;
  now: number;
  random: () => number;
}): NextState {
  const { outcome, attempts, policy, expireAt, now } = params;
  if (outcome.kind === 'delivered') return { to: 'succeeded' };
  if (outcome.kind === 'discard') return { to: 'discarded', error: outcome.reason };
  if (attempts >= policy.maxAttempts) {
    return { to: 'archived', error: `attempts exhausted (${attempts}/${policy.maxAttempts}): ${outcome.reason}` };
  }
  const retryAt = now + backoffDelayMs(policy, attempts, params.random, outcome.retryAfterMs);
  if (expireAt !== null && retryAt > expireAt) {
    return { to: 'archived', error: `expired before the next attempt: ${outcome.reason}` };
  }
  return { to: 'awaiting_retry', retryAt, error: outcome.reason };
}
