/**
 * How every backend serves eventList in bounded time, whatever the size of the events table.
 *
 * A page walks ONE index newest first (by seq), chosen from the filters given:
 *
 *   group        → (tenant_id, grp, seq)            partial: grouped events only
 *   type         → (tenant_id, type, seq)           partial: typed events only
 *   state        → (tenant_id, state, seq)          when the state is one that holds few events in
 *                                                   a healthy system (TROUBLE_STATES), or alone
 *   destination  → (tenant_id, destination name, seq)
 *   state        → (tenant_id, state, seq)          (a bulk state with a destination: destination first)
 *   none         → (tenant_id, seq)
 *
 * The other filters given (and `from`/`to`, which no index serves in seq order) are residual:
 * checked on the rows the walk reaches. A walk with residual filters examines at most
 * `examineMax(limit)` index entries; when it stops there before the page is full, the page holds
 * the matches found (maybe none) and a cursor just past the last entry examined, so the next page
 * continues the walk. Every matching row comes back exactly once over the pages, in order, and no
 * page costs more than a bounded number of entries: an empty page with a cursor means "none in
 * this stretch; ask again".
 *
 * Cursors are base64url of a seq: the page's rows, or the entries examined, all have a seq below
 * it. The same form as before this plan, so cursors stay valid across the upgrade.
 */
import { BelfryError } from '../core/errors.ts';
import type { EventState } from '../core/event.ts';
import { eventFromRow, type EventRow } from './core/rows.ts';
import type { EventListPage, EventListParams } from './store.ts';

/** Index entries one page may examine when filters remain to be checked on the rows. */
export const LIST_EXAMINED_ROWS_MAX = 2_000;

/** States that hold few events in a healthy system: their index is the better walk even with a destination. */
const TROUBLE_STATES: ReadonlySet<EventState> = new Set(['executing', 'awaiting_retry', 'discarded', 'archived']);

/** The index a page walks. */
export type ListKey = 'tenant' | 'state' | 'destination' | 'group' | 'type';

export interface ListPlan {
  key: ListKey;
  /** Whether filters remain to be checked on the rows the walk reaches. */
  residual: boolean;
  /** Index entries to walk at most: limit + 1 (to know whether there is more) without residual filters. */
  examine: number;
  /** Rows before this seq (exclusive). */
  beforeSeq: number;
}

export function listKey(p: EventListParams): ListKey {
  if (p.group !== undefined) return 'group';
  if (p.type !== undefined) return 'type';
  if (p.state !== undefined && (p.destination === undefined || TROUBLE_STATES.has(p.state))) return 'state';
  if (p.destination !== undefined) return 'destination';
  return 'tenant';
}

export function listPlan(p: EventListParams): ListPlan {
  const key = listKey(p);
  const given = {
    state: p.state !== undefined,
    destination: p.destination !== undefined,
    group: p.group !== undefined,
    type: p.type !== undefined,
  };
  const residual =
    p.fromMs !== undefined ||
    p.toMs !== undefined ||
    (given.group && key !== 'group') ||
    (given.type && key !== 'type') ||
    (given.state && key !== 'state') ||
    (given.destination && key !== 'destination');
  return {
    key,
    residual,
    examine: residual ? Math.max(LIST_EXAMINED_ROWS_MAX, p.limit + 1) : p.limit + 1,
    beforeSeq: p.cursor === undefined ? Number.MAX_SAFE_INTEGER : decodeSeqCursor(p.cursor),
  };
}

/**
 * The next cursor of a page: after the last row when a row beyond the page matched (`hits` holds
 * limit + 1 seqs, newest first), else after the last entry examined when the walk stopped at its
 * bound (`walkEndSeq`, null when the walk reached the end of the index).
 */
export function listNextCursor(hitSeqs: number[], limit: number, walkEndSeq: number | null): string | null {
  if (hitSeqs.length > limit) return encodeSeqCursor(hitSeqs[limit - 1]);
  return walkEndSeq === null ? null : encodeSeqCursor(walkEndSeq);
}

/**
 * The page of a walk: `rows` holds at most limit + 1 matches, newest first (the one beyond the
 * page only tells that there is more); `walkEndSeq` as for listNextCursor.
 */
export function listPage(rows: EventRow[], limit: number, walkEndSeq: number | null): EventListPage {
  const nextCursor = listNextCursor(
    rows.map((r) => r.seq),
    limit,
    walkEndSeq,
  );
  if (rows.length > limit) rows.length = limit;
  return { events: rows.map(eventFromRow), nextCursor };
}

export function encodeSeqCursor(seq: number): string {
  return Buffer.from(String(seq)).toString('base64url');
}

export function decodeSeqCursor(cursor: string): number {
  const seq = Number(Buffer.from(cursor, 'base64url').toString());
  if (!Number.isSafeInteger(seq) || seq < 1)
    throw new BelfryError('invalid_request', 'cursor: not a cursor of this list', [
      { field: 'cursor', message: 'not a cursor of this list' },
    ]);
  return seq;
}
