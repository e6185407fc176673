/** Schedules with their next occurrences (in their zone), pause and resume (PATCH, If-Match on the version shown). */
import { useState } from 'preact/hooks';
import { api, Badge, destinationText, Empty, ErrorNote, fmtRelative, html, PageHead, Time, useLoad } from '../lib.js';

/** A schedule's own page of the API (GET /v1/schedules/{id}): its next 5 occurrences and its event template. */
function ScheduleDetail({ id, cols }) {
  const load = useLoad(() => api('GET', `/v1/schedules/${encodeURIComponent(id)}`), [id]);
  const s = load.data;
  return html`<tr class="detail-row"><td colspan=${cols}>
    <${ErrorNote} error=${load.error} />
    ${
      s
        ? html`<div class="grid-2">
          <div><h4>Next occurrences</h4>${
            s.next.length === 0
              ? html`<p class="muted">none left</p>`
              : html`<ol class="occurrences" data-test="next-occurrences">${s.next.map((o) => html`<li title=${o.at}>${o.local.replace('T', ' ').slice(0, 19)} <small class="muted">${s.timezone} · ${fmtRelative(o.at)}</small></li>`)}</ol>`
          }
            <p class="muted small">missed occurrences: ${s.missed}${s.lastOccurrenceAt ? html` · last made <${Time} iso=${s.lastOccurrenceAt} />` : ''}</p></div>
          <div><h4>Each occurrence's payload</h4><pre class="payload">${JSON.stringify(s.payload ?? null, null, 2)}</pre></div>
        </div>`
        : html`<p class="muted">Loading…</p>`
    }
  </td></tr>`;
}

export function SchedulesView() {
  const [cursor, setCursor] = useState([]);
  const at = cursor[cursor.length - 1];
  const load = useLoad(
    () => api('GET', `/v1/schedules?limit=100${at ? `&cursor=${encodeURIComponent(at)}` : ''}`),
    [at],
  );
  const [error, setError] = useState(null);
  const [open, setOpen] = useState(null);
  const toggle = async (s) => {
    setError(null);
    try {
      await api('PATCH', `/v1/schedules/${encodeURIComponent(s.id)}`, {
        headers: { 'if-match': `"${s.version}"` },
        body: { paused: !s.paused },
      });
      load.reload();
    } catch (err) {
      setError(err);
    }
  };
  const schedules = load.data?.schedules ?? [];
  return html`<section>
    <${PageHead} title="Schedules" sub="Recurring schedules; each occurrence becomes an event.">
      <button class="small secondary outline" onClick=${load.reload}>Refresh</button>
    </${PageHead}>
    <${ErrorNote} error=${load.error ?? error} />
    ${
      schedules.length === 0
        ? html`<${Empty}>${load.loading ? 'Loading…' : 'No schedules.'}</${Empty}>`
        : html`<div class="table-wrap"><table class="striped data">
          <thead><tr><th>Schedule</th><th>Timing</th><th>Destination</th><th>State</th><th>Next occurrences</th><th class="num">Fired</th><th class="num">Missed</th><th></th></tr></thead>
          <tbody>${schedules.map(
            (s) => html`<tr data-schedule=${s.id} class=${open === s.id ? 'open' : ''}>
              <td class="id"><a href=${`#/events?schedule=${encodeURIComponent(s.id)}`} title="its occurrences">${s.id}</a>${s.type ? html`<div class="muted small">${s.type}</div>` : null}</td>
              <td><code>${s.cron ?? `every ${s.every}`}</code><div class="muted small">${s.timezone}</div></td>
              <td class="ellipsis">${destinationText(s.destination)}</td>
              <td><${Badge} value=${s.paused ? 'paused' : 'active'} /></td>
              <td>${
                s.paused
                  ? html`<span class="muted">paused</span>`
                  : s.next.length === 0
                    ? html`<span class="muted">none left</span>`
                    : html`<ul class="occurrences">${s.next.map((o) => html`<li title=${o.at}>${o.local.replace('T', ' ').slice(0, 19)} <small class="muted">${fmtRelative(o.at)}</small></li>`)}</ul>`
              }
                <button class="linkish small" onClick=${() => setOpen(open === s.id ? null : s.id)}>${open === s.id ? 'less' : 'next 5 …'}</button></td>
              <td class="num">${s.fired}</td>
              <td class="num">${s.missedCount}</td>
              <td class="row-actions"><button class="small outline" onClick=${() => toggle(s)}>${s.paused ? 'Resume' : 'Pause'}</button></td>
            </tr>
            ${open === s.id ? html`<${ScheduleDetail} id=${s.id} cols=${8} />` : null}`,
          )}</tbody>
        </table></div>`
    }
    <div class="pager">
      <button class="small secondary outline" disabled=${cursor.length === 0} onClick=${() => setCursor(cursor.slice(0, -1))}>← Previous</button>
      <button class="small secondary outline" disabled=${!load.data?.nextCursor} onClick=${() => setCursor([...cursor, load.data.nextCursor])}>Next →</button>
    </div>
  </section>`;
}
