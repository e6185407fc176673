/**
 * The archive: archived (or discarded) events with a replay each, and bulk replay through
 * POST /v1/events/bulk: a dry run first (count and sample, nothing changes), then the real run
 * for exactly the filter the dry run counted, followed as a job (GET /v1/bulk/{id}).
 */
import { useEffect, useState } from 'preact/hooks';
import { api, Badge, Empty, ErrorNote, html, navigate, PageHead } from '../lib.js';
import { EventTable, Pager, usePagedEvents } from './events.js';

const JOB_POLL_MS = 1_000;

function bulkFilter(f) {
  const filter = { state: f.state };
  if (f.destination) filter.destination = f.destination;
  if (f.type) filter.type = f.type;
  if (f.group) filter.group = f.group;
  if (f.fireAtFrom) filter.fireAtFrom = f.fireAtFrom;
  if (f.fireAtTo) filter.fireAtTo = f.fireAtTo;
  return filter;
}

function JobProgress({ job }) {
  const pct =
    job.matched > 0 ? Math.round(((job.done + job.skipped) / job.matched) * 100) : job.state === 'running' ? 0 : 100;
  return html`<div class="job" data-test="bulk-job">
    <div class="job-head"><${Badge} value=${job.state} /> <code>${job.id}</code></div>
    <progress value=${pct} max="100"></progress>
    <div class="muted small">${job.done} replayed · ${job.skipped} skipped · ${job.matched} selected so far${job.errors.length ? ` · errors: ${job.errors.join('; ')}` : ''}</div>
  </div>`;
}

function BulkReplay({ state, onDone }) {
  const [f, setF] = useState({ state, destination: '', type: '', group: '', fireAtFrom: '', fireAtTo: '' });
  const [dry, setDry] = useState(null);
  const [job, setJob] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  useEffect(() => setF((x) => ({ ...x, state })), [state]);
  // A dry run counts one filter; changing the filter asks for a new one before the real run.
  const set = (k) => (e) => {
    setF({ ...f, [k]: e.currentTarget.value });
    setDry(null);
  };
  useEffect(() => {
    if (!job || job.state !== 'running') return undefined;
    const t = setTimeout(async () => {
      try {
        const next = await api('GET', `/v1/bulk/${job.id}`);
        setJob(next);
        if (next.state !== 'running') onDone();
      } catch (err) {
        setError(err);
      }
    }, JOB_POLL_MS);
    return () => clearTimeout(t);
  }, [job]);
  const call = async (dryRun) => {
    setBusy(true);
    setError(null);
    try {
      const res = await api('POST', '/v1/events/bulk', {
        body: { filter: bulkFilter(f), action: 'replay', ...(dryRun ? { dryRun: true } : {}) },
      });
      if (dryRun) setDry(res);
      else {
        setDry(null);
        setJob({ id: res.id, state: res.state, matched: 0, done: 0, skipped: 0, errors: [] });
      }
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="card bulk" data-test="bulk">
    <h3>Bulk replay</h3>
    <p class="muted small">Selects ${state} events by the filter below. Run a dry run first: it counts and samples, and changes nothing.</p>
    <form class="filter-form" onSubmit=${(e) => {
      e.preventDefault();
      call(true);
    }}>
      <label>Destination<input name="bulk-destination" value=${f.destination} onInput=${set('destination')} /></label>
      <label>Type<input name="bulk-type" value=${f.type} onInput=${set('type')} /></label>
      <label>Group<input name="bulk-group" value=${f.group} onInput=${set('group')} /></label>
      <label>Fires from<input name="bulk-from" value=${f.fireAtFrom} onInput=${set('fireAtFrom')} placeholder="RFC 3339" /></label>
      <label>to<input name="bulk-to" value=${f.fireAtTo} onInput=${set('fireAtTo')} placeholder="RFC 3339" /></label>
      <div class="filter-buttons"><button type="submit" class="small secondary" aria-busy=${busy && !dry ? 'true' : 'false'}>Dry run</button></div>
    </form>
    <${ErrorNote} error=${error} />
    ${
      dry
        ? html`<div class="dry-run" data-test="dry-run">
          <p><strong>${dry.exact ? '' : 'at least '}${dry.matched}</strong> event${dry.matched === 1 ? '' : 's'} selected, <strong>${dry.applicable}</strong> can be replayed.</p>
          ${dry.sample.length ? html`<p class="muted small">Sample: ${dry.sample.map((e, i) => html`${i ? ', ' : ''}<a href=${`#/events/${encodeURIComponent(e.id)}`}>${e.id}</a>`)}</p>` : null}
          <button class="small" disabled=${dry.applicable === 0 || busy} onClick=${() => call(false)}>Replay ${dry.exact ? '' : 'at least '}${dry.applicable} event${dry.applicable === 1 ? '' : 's'}</button>
        </div>`
        : null
    }
    ${job ? html`<${JobProgress} job=${job} />` : null}
  </section>`;
}

export function ArchiveView({ query }) {
  const state = query.state === 'discarded' ? 'discarded' : 'archived';
  const filter = { state };
  const paged = usePagedEvents(filter, state);
  const [rowError, setRowError] = useState(null);
  const [replayed, setReplayed] = useState({});
  const replay = async (e) => {
    setRowError(null);
    try {
      await api('POST', `/v1/events/${encodeURIComponent(e.id)}/replay`, { headers: { 'if-match': `"${e.version}"` } });
      setReplayed({ ...replayed, [e.id]: true });
    } catch (err) {
      setRowError(err);
    }
  };
  const events = paged.data?.events ?? [];
  return html`<section>
    <${PageHead} title="Archive" sub="Events that will not be delivered again unless replayed.">
      <div role="group" class="segmented">
        <button class=${`small ${state === 'archived' ? '' : 'outline secondary'}`} onClick=${() => navigate('archive')}>Archived</button>
        <button class=${`small ${state === 'discarded' ? '' : 'outline secondary'}`} onClick=${() => navigate('archive', { state: 'discarded' })}>Discarded</button>
      </div>
      <button class="small secondary outline" onClick=${paged.reload}>Refresh</button>
    </${PageHead}>
    <${BulkReplay} state=${state} onDone=${paged.reload} />
    <${ErrorNote} error=${paged.error ?? rowError} />
    ${
      events.length > 0
        ? html`<${EventTable}
          events=${events}
          actions=${(e) => (replayed[e.id] ? html`<span class="badge tone-ok">replayed</span>` : html`<button class="small outline" onClick=${() => replay(e)}>Replay</button>`)}
        />`
        : html`<${Empty}>${paged.loading ? 'Loading…' : `No ${state} events.`}</${Empty}>`
    }
    <${Pager} paged=${paged} />
  </section>`;
}
