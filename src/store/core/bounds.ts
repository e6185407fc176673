/**
 * The bounds every backend checks the same way, before any SQL runs.
 */
import { isRetentionState } from '../../core/retention.ts';
import type { EventDeleteTerminalParams } from '../store.ts';

/** Bound on one page of eventList / eventListDue / transitionList / eventRescue. */
export const PAGE_LIMIT_MAX = 10_000;

/** Throws a RangeError naming `what` unless `limit` is an integer from 1 to PAGE_LIMIT_MAX. */
export function checkLimit(limit: number, what: string): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > PAGE_LIMIT_MAX) {
    throw new RangeError(`${what}: limit must be an integer from 1 to ${PAGE_LIMIT_MAX}, got ${limit}`);
  }
}

/** The limit and the state of an eventDeleteTerminal: only terminal states are ever deleted. */
export function checkDeleteTerminal(params: EventDeleteTerminalParams): void {
  checkLimit(params.limit, 'eventDeleteTerminal');
  if (!isRetentionState(params.state)) throw new RangeError(`eventDeleteTerminal: ${String(params.state)} is not a terminal state`);
}
