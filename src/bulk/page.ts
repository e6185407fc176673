/**
 * One page of a bulk operation's selection (selection.ts): eventList with the filter's state,
 * destination, group, type and fireAt range, newest first by creation, then the tags checked on
 * the page's rows. Read by the dry run (service.ts) and the job (runner.ts).
 */
import type { EventRecord } from '../core/event.ts';
import type { Store } from '../store/store.ts';
import type { BulkFilter } from './selection.ts';

export interface BulkPage {
  /** Events of the page the filter selects (tags included), newest first. */
  events: EventRecord[];
  nextCursor: string | null;
}

/** One page of the selection. */
export async function bulkSelectPage(
  store: Pick<Store, 'eventList'>,
  tenantId: string,
  filter: BulkFilter,
  cursor: string | null,
  limit: number,
): Promise<BulkPage> {
  const page = await store.eventList({
    tenantId,
    state: filter.state,
    destination: filter.destination,
    group: filter.group,
    type: filter.type,
    fromMs: filter.fireAtFromMs,
    toMs: filter.fireAtToMs,
    limit,
    cursor: cursor ?? undefined,
  });
  const tags = filter.tags ? Object.entries(filter.tags) : [];
  const events = tags.length === 0 ? page.events : page.events.filter((e) => tags.every(([k, v]) => e.tags[k] === v));
  return { events, nextCursor: page.nextCursor };
}
