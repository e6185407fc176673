/**
 * The bounds every backend checks the same way, before any SQL runs.
 */
import { isRetentionState } from '../../core/retention.ts';
import { FORECAST_BUCKETS_MAX } from '../../core/forecast.ts';
import {
  EVENT_LIST_DUE_SKIP_MAX,
  PULL_CLAIM_MAX,
  PULL_SETTLE_MAX,
  type EventDeleteTerminalParams,
  type EventForecastParams,
  type EventListDueParams,
  type EventPullClaimParams,
  type EventPullSettleParams,
} from '../store.ts';

/** Bound on one page of eventList / eventListDue / transitionList / eventRescue. */
export const PAGE_LIMIT_MAX = 10_000;

/** Throws a RangeError naming `what` unless `limit` is an integer from 1 to PAGE_LIMIT_MAX. */
export function checkLimit(limit: number, what: string): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_LIMIT_MAX) {
    throw new RangeError(`${what}: limit must be an integer from 1 to ${PAGE_LIMIT_MAX}, got ${limit}`);
  }
}

/** The limit of an eventListDue and the size of its `skip`. */
export function checkListDue(params: EventListDueParams): void {
  checkLimit(params.limit, 'eventListDue');
  if ((params.skip?.length ?? 0) > EVENT_LIST_DUE_SKIP_MAX) {
    throw new RangeError(
      `eventListDue: skip holds at most ${EVENT_LIST_DUE_SKIP_MAX} queues, got ${params.skip!.length}`,
    );
  }
}

/** The limit and the state of an eventDeleteTerminal: only terminal states are ever deleted. */
export function checkDeleteTerminal(params: EventDeleteTerminalParams): void {
  checkLimit(params.limit, 'eventDeleteTerminal');
  if (!isRetentionState(params.state))
    throw new RangeError(`eventDeleteTerminal: ${String(params.state)} is not a terminal state`);
}

/**
 * A forecast's window and buckets: whole ms, at most FORECAST_BUCKETS_MAX buckets (one more when the
 * caller's window starts inside a bucket: fromMs is the grid's aligned start), a known `by`.
 */
export function checkForecast(p: EventForecastParams): EventForecastParams {
  if (![p.fromMs, p.toMs, p.bucketMs].every(Number.isSafeInteger) || p.bucketMs < 1 || p.toMs <= p.fromMs) {
    throw new RangeError(
      `eventForecast: need integer fromMs < toMs and bucketMs ≥ 1, got ${p.fromMs}, ${p.toMs}, ${p.bucketMs}`,
    );
  }
  if (Math.ceil((p.toMs - p.fromMs) / p.bucketMs) > FORECAST_BUCKETS_MAX + 1)
    throw new RangeError(`eventForecast: more than ${FORECAST_BUCKETS_MAX} buckets`);
  if (!['none', 'destination', 'tenant'].includes(p.by))
    throw new RangeError(`eventForecast: by must be none, destination or tenant, got ${String(p.by)}`);
  return p;
}

/** Pull claim types, at most (each is one bounded index page). */
export const PULL_TYPES_MAX = 10;

/** A pull claim's max (1 to PULL_CLAIM_MAX) and types (null, or 1 to PULL_TYPES_MAX). */
export function checkPullClaim(p: EventPullClaimParams): void {
  if (!Number.isInteger(p.max) || p.max < 1 || p.max > PULL_CLAIM_MAX)
    throw new RangeError(`eventPullClaim: max must be an integer from 1 to ${PULL_CLAIM_MAX}, got ${p.max}`);
  if (p.types !== null && (p.types.length < 1 || p.types.length > PULL_TYPES_MAX))
    throw new RangeError(`eventPullClaim: types must hold 1 to ${PULL_TYPES_MAX} types, or be null`);
  if (typeof p.receipt !== 'string' || p.receipt.length === 0)
    throw new RangeError('eventPullClaim: receipt must be a non-empty string');
}

/** A batch of pull claim ends: 1 to PULL_SETTLE_MAX, never one event twice. */
export function checkPullSettleMany(settles: EventPullSettleParams[]): void {
  if (!Array.isArray(settles) || settles.length < 1 || settles.length > PULL_SETTLE_MAX)
    throw new RangeError(`eventPullSettleMany: 1 to ${PULL_SETTLE_MAX} settles, got ${settles?.length}`);
  const seen = new Set<string>();
  for (const s of settles) {
    const key = `${s.tenantId}\u0000${s.id}`;
    if (seen.has(key)) throw new RangeError(`eventPullSettleMany: event "${s.id}" is named twice`);
    seen.add(key);
  }
}
