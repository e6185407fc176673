/**
 * Events: filters (state, destination, group, type, fire time), an id lookup, and cursor paging
 * (GET /v1/events walks one index per page; a filtered page may come back short with a cursor).
 */
import { useState } from 'preact/hooks';
import { api, Badge, destinationText, Empty, ErrorNote, html, navigate, PageHead, qs, Time, useLoad } from '../lib.js';

export const STATES = ['scheduled', 'executing', 'awaiting_retry', 'succeeded', 'discarded', 'archived', 'canceled'];
const PAGE_SIZE = 50;
const FILTERS = ['state', 'destination', 'group', 'type', 'from', 'to', 'schedule'];

export function EventTable({ events, actions }) {
  return html`<div class="table-wrap"><table class="striped data">
    <thead><tr><th>Event</th><th>State</th><th>Type</th><th>Destination</th><th>Fires at</th><th class="num">Attempts</th><th class="num">Last status</th>${actions ? html`<th></th>` : null}</tr></thead>
    <tbody>
      ${events.map(
        (e) => html`<tr data-event-id=${e.id}>
          <td class="id"><a href=${`#/events/${encodeURIComponent(e.id)}`}>${e.id}</a>${e.group ? html`<div class="muted small">group ${e.group}</div>` : null}</td>
          <td><${Badge} value=${e.state} /></td>
          <td>${e.type ?? html`<span class="muted">—</span>`}</td>
          <td class="ellipsis" title=${destinationText(e.destination)}>${destinationText(e.destination)}</td>
          <td><${Time} iso=${e.fireAt} /></td>
          <td class="num">${e.attempts}</td>
          <td class="num">${e.lastStatus === null ? html`<span class="muted">—</span>` : html`<span class=${e.lastStatus < 300 ? 'ok' : 'bad'}>${e.lastStatus}</span>`}</td>
          ${actions ? html`<td class="row-actions">${actions(e)}</td>` : null}
        </tr>`,
      )}
    </tbody>
  </table></div>`;
}

function FilterBar({ query, base }) {
  const [draft, setDraft] = useState(() => ({ ...query }));
  const [lookup, setLookup] = useState('');
  const set = (k) => (e) => setDraft({ ...draft, [k]: e.currentTarget.value });
  const apply = (e) => {
    e.preventDefault();
    const q = {};
    for (const k of FILTERS) if (draft[k]) q[k] = draft[k];
    navigate(base, q);
  };
  const go = (e) => {
    e.preventDefault();
    if (lookup.trim()) navigate(`events/${encodeURIComponent(lookup.trim())}`);
  };
  return html`<div class="filters">
    <form class="filter-form" onSubmit=${apply}>
      <label>State<select name="state" value=${draft.state ?? ''} onChange=${set('state')}>
        <option value="">any</option>
        ${STATES.map((s) => html`<option value=${s}>${s.replace('_', ' ')}</option>`)}
      </select></label>
      <label>Destination<input name="destination" value=${draft.destination ?? ''} onInput=${set('destination')} placeholder="name" /></label>
      <label>Group<input name="group" value=${draft.group ?? ''} onInput=${set('group')} /></label>
      <label>Type<input name="type" value=${draft.type ?? ''} onInput=${set('type')} /></label>
      <label>Fires from<input name="from" value=${draft.from ?? ''} onInput=${set('from')} placeholder="RFC 3339 time" /></label>
      <label>to<input name="to" value=${draft.to ?? ''} onInput=${set('to')} placeholder="RFC 3339" /></label>
      <div class="filter-buttons"><button type="submit" class="small">Filter</button>
      <button type="button" class="small secondary outline" onClick=${() => {
        setDraft({});
        navigate(base);
      }}>Clear</button></div>
    </form>
    <form class="lookup" role="search" onSubmit=${go}>
      <input type="search" name="id" aria-label="Event id" placeholder="Go to event id…" value=${lookup} onInput=${(e) => setLookup(e.currentTarget.value)} />
    </form>
  </div>`;
}

/** Cursor paging: the cursors of the pages before this one are kept, so Previous goes back. */
export function usePagedEvents(filter, key) {
  const [st, setSt] = useState({ key, cursors: [] });
  const cursors = st.key === key ? st.cursors : [];
  const cursor = cursors[cursors.length - 1];
  const load = useLoad(() => api('GET', `/v1/events${qs({ ...filter, limit: PAGE_SIZE, cursor })}`), [key, cursor]);
  return {
    ...load,
    page: cursors.length + 1,
    next: () => load.data?.nextCursor && setSt({ key, cursors: [...cursors, load.data.nextCursor] }),
    prev: () => setSt({ key, cursors: cursors.slice(0, -1) }),
  };
}

export function Pager({ paged }) {
  return html`<div class="pager">
    <button class="small secondary outline" disabled=${paged.page === 1} onClick=${paged.prev}>← Previous</button>
    <span class="muted">page ${paged.page}</span>
    <button class="small secondary outline" disabled=${!paged.data?.nextCursor} onClick=${paged.next}>Next →</button>
  </div>`;
}

export function EventsView({ query }) {
  const filter = {};
  for (const k of FILTERS) if (query[k]) filter[k] = query[k];
  const key = JSON.stringify(filter);
  const paged = usePagedEvents(filter, key);
  const events = paged.data?.events ?? [];
  return html`<section>
    <${PageHead} title="Events" sub="Newest first. Filter by state, destination, group, type or fire time; open an event for its trace.">
      <button class="small secondary outline" onClick=${paged.reload} aria-busy=${paged.loading ? 'true' : 'false'}>Refresh</button>
    </${PageHead}>
    <${FilterBar} key=${key} query=${query} base="events" />
    ${
      query.schedule
        ? html`<p class="filter-note">Occurrences of schedule <code>${query.schedule}</code>, newest first · <a href="#/events">all events</a></p>`
        : null
    }
    <${ErrorNote} error=${paged.error} />
    ${
      events.length > 0
        ? html`<${EventTable} events=${events} />`
        : paged.loading
          ? html`<${Empty}>Loading…</${Empty}>`
          : html`<${Empty}>${paged.data?.nextCursor ? 'No match on this page; the list goes on: Next →' : 'No events match.'}</${Empty}>`
    }
    <${Pager} paged=${paged} />
  </section>`;
}
