/**
 * A page of an event's trace with a cursor, on top of Store.transitionList: every backend pages a
 * trace the same way, and a trace longer than a page is never cut silently.
 */
import type { TransitionRecord } from '../core/event.ts';
import { decodeSeqCursor, encodeSeqCursor } from './event-list-plan.ts';
import type { Store } from './store.ts';

export interface TransitionPageParams {
  tenantId: string;
  eventId: string;
  limit: number;
  /** nextCursor of the previous page. */
  cursor?: string;
}

export interface TransitionPage {
  /** In trace order (seq ascending). */
  transitions: TransitionRecord[];
  /** Null when the page holds the end of the trace. */
  nextCursor: string | null;
}

export async function transitionPage(
  store: Pick<Store, 'transitionList'>,
  p: TransitionPageParams,
): Promise<TransitionPage> {
  const afterSeq = p.cursor === undefined ? 0 : decodeSeqCursor(p.cursor);
  const rows = await store.transitionList({ tenantId: p.tenantId, eventId: p.eventId, afterSeq, limit: p.limit + 1 });
  const more = rows.length > p.limit;
  if (more) rows.length = p.limit;
  return { transitions: rows, nextCursor: more ? encodeSeqCursor(rows[rows.length - 1].seq) : null };
}
