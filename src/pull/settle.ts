/**
 * What ends a pull claim does to its event: the same decision as a push delivery's outcome
 * (outcome.ts decideNext), so pull events follow their retry policy, expiry and archive exactly
 * as pushed ones do.
 *
 *   ack                         ──▶ succeeded
 *   nack {discard: true}        ──▶ discarded
 *   nack [retryAfter]           ──▶ awaiting_retry at now + retryAfter (or the policy's backoff)
 *   visibility timeout expired  ──▶ awaiting_retry at now + backoff
 *                                   (either retry ──▶ archived once attempts are spent or expireAt passes)
 */
import { DEFAULT_RETRY, type RetryPolicy } from '../core/backoff.ts';
import type { DestinationConfig } from '../core/destination.ts';
import type { EventRecord } from '../core/event.ts';
import type { EventPullSettleParams, PullSettleAction } from '../store/store.ts';
import { decideNext } from '../dispatch/outcome.ts';

/** The reason recorded when a claim's visibility timeout ends without an ack or nack. */
export const PULL_EXPIRED_REASON = 'visibility timeout expired';

export type PullEnd =
  | { action: 'ack' }
  | { action: 'nack'; discard: boolean; retryAfterMs?: number; reason?: string }
  | { action: 'expire' };

/** The event's retry policy: its own, else its destination's, else the default. */
export function pullPolicy(event: EventRecord, destination: DestinationConfig | null): RetryPolicy {
  return event.retry ?? destination?.retry ?? DEFAULT_RETRY;
}

/**
 * The settle call for `end` of the claim `receipt` of `event` (as read while claimed). An explicit
 * nack `retryAfter` sets the retry time itself (the consumer knows when to try again), bounded by
 * the policy's attempts and the event's expiry like any retry.
 */
export function decidePull(params: {
  event: EventRecord;
  receipt: string;
  end: PullEnd;
  policy: RetryPolicy;
  now: number;
  random: () => number;
}): EventPullSettleParams {
  const { event, receipt, end, policy, now } = params;
  const base = {
    tenantId: event.tenantId,
    id: event.id,
    receipt,
    attempts: event.attempts,
    action: end.action as PullSettleAction,
    now,
  };
  if (end.action === 'ack') return { ...base, to: 'succeeded' };
  if (end.action === 'nack' && end.discard)
    return { ...base, to: 'discarded', error: end.reason ?? 'discarded by the consumer' };
  const reason = end.action === 'nack' ? (end.reason ?? 'nacked by the consumer') : PULL_EXPIRED_REASON;
  const retryAfterMs = end.action === 'nack' ? end.retryAfterMs : undefined;
  const next = decideNext({
    outcome: { kind: 'retry', reason, retryAfterMs, durationMs: 0 },
    attempts: event.attempts,
    policy,
    expireAt: event.expireAt,
    now,
    random: params.random,
  });
  if (next.to === 'awaiting_retry' && retryAfterMs !== undefined) next.retryAt = now + retryAfterMs;
  return { ...base, to: next.to as EventPullSettleParams['to'], retryAt: next.retryAt, error: next.error };
}
