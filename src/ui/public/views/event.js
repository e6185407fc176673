/**
 * One event: its fields, payload and headers (as text), the actions its state allows (cancel,
 * reschedule, replay; each conditional on the version shown, so a change that raced the
 * scheduler answers 409/412 instead of acting on a state the user did not see) and its trace as
 * a timeline: each attempt's status, duration and lateness, each edit's old and new fireAt.
 */
import { useEffect, useState } from 'preact/hooks';
import {
  api,
  Badge,
  destinationText,
  ErrorNote,
  Facts,
  fmtMs,
  fmtTime,
  html,
  jsonText,
  KeyValues,
  PageHead,
  Time,
  useLoad,
} from '../lib.js';

const CANCELABLE = new Set(['scheduled', 'awaiting_retry']);
/** An event that is moving (executing, retrying, or due within a minute) is read again this often. */
const LIVE_REFRESH_MS = 2_000;
const LIVE_AHEAD_MS = 60_000;

function isLive(event) {
  if (!event) return false;
  if (event.state === 'executing' || event.state === 'awaiting_retry') return true;
  return event.state === 'scheduled' && new Date(event.dueAt).getTime() - Date.now() < LIVE_AHEAD_MS;
}
const REPLAYABLE = new Set(['archived', 'discarded']);

function isoOfMs(ms) {
  return typeof ms === 'number' ? new Date(ms).toISOString() : ms;
}

/** A datetime-local input's value for an ISO time (local time, seconds). */
function toLocalInput(iso) {
  const d = new Date(iso);
  const off = d.getTimezoneOffset() * 60_000;
  return new Date(d.getTime() - off).toISOString().slice(0, 19);
}

function transitionTitle(t) {
  if (t.kind === 'created') return 'Created';
  if (t.kind === 'updated') return t.detail?.operation ? `Edited (${t.detail.operation})` : 'Edited';
  if (t.kind === 'replayed') return t.detail?.operation ? `Replayed (${t.detail.operation})` : 'Replayed';
  if (t.fromState === 'executing' || t.toState === 'executing') {
    if (t.toState === 'executing') return `Attempt ${t.attempt} started`;
    return `Attempt ${t.attempt}: ${t.toState === 'succeeded' ? 'delivered' : t.toState.replace('_', ' ')}`;
  }
  return `${t.fromState ?? '—'} → ${t.toState}`.replace(/_/g, ' ');
}

function Transition({ t }) {
  const tone =
    t.toState === 'succeeded'
      ? 'ok'
      : t.toState === 'discarded' || (t.toState === 'archived' && t.fromState === 'executing')
        ? 'bad'
        : t.toState === 'awaiting_retry'
          ? 'warn'
          : t.toState === 'executing'
            ? 'run'
            : t.kind === 'updated' || t.kind === 'replayed'
              ? 'info'
              : 'muted';
  const facts = [];
  if (t.status !== null)
    facts.push(html`<span class=${`chip ${t.status < 300 ? 'ok' : 'bad'}`}>HTTP ${t.status}</span>`);
  if (t.durationMs !== null) facts.push(html`<span class="chip">took ${fmtMs(t.durationMs)}</span>`);
  if (t.latenessMs !== null)
    facts.push(html`<span class=${`chip ${t.latenessMs > 1000 ? 'warn' : ''}`}>${fmtMs(t.latenessMs)} late</span>`);
  const edit = t.kind === 'updated' && t.detail;
  return html`<li class=${`tl-item tl-${tone}`} data-kind=${t.kind}>
    <div class="tl-dot"></div>
    <div class="tl-body">
      <div class="tl-head"><strong>${transitionTitle(t)}</strong><${Badge} value=${t.toState} /><span class="muted tl-time" title=${t.at}>${fmtTime(t.at)}</span></div>
      ${facts.length ? html`<div class="tl-facts">${facts}</div>` : null}
      ${
        edit && edit.fireAtBefore !== edit.fireAtAfter
          ? html`<div class="tl-edit">fireAt <del>${fmtTime(isoOfMs(edit.fireAtBefore))}</del> → <ins>${fmtTime(isoOfMs(edit.fireAtAfter))}</ins></div>`
          : null
      }
      ${edit && edit.fields?.length ? html`<div class="muted small">changed: ${edit.fields.join(', ')}</div>` : null}
      ${t.error ? html`<div class="tl-error"><code>${t.error}</code></div>` : null}
    </div>
  </li>`;
}

function Trace({ id, version }) {
  const trace = useLoad(() => api('GET', `/v1/events/${encodeURIComponent(id)}/transitions`), [id, version]);
  const items = trace.data?.transitions ?? [];
  return html`<section class="card">
    <h3>Trace <small class="muted">${items.length} step${items.length === 1 ? '' : 's'}${trace.data?.nextCursor ? ' (first page)' : ''}</small></h3>
    <${ErrorNote} error=${trace.error} />
    <ol class="timeline" data-test="trace">${items.map((t) => html`<${Transition} key=${t.seq} t=${t} />`)}</ol>
  </section>`;
}

function Actions({ event, onChanged }) {
  const [busy, setBusy] = useState(null);
  const [error, setError] = useState(null);
  const [fireAt, setFireAt] = useState(null);
  const ifMatch = { 'if-match': `"${event.version}"` };
  const run = async (what, fn) => {
    setBusy(what);
    setError(null);
    try {
      onChanged(await fn());
      setFireAt(null);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(null);
    }
  };
  const id = encodeURIComponent(event.id);
  return html`<div class="event-actions">
    ${
      CANCELABLE.has(event.state)
        ? html`<button class="small secondary" aria-busy=${busy === 'cancel' ? 'true' : 'false'} onClick=${() => confirm(`Cancel event ${event.id}?`) && run('cancel', () => api('DELETE', `/v1/events/${id}`, { headers: ifMatch }))}>Cancel</button>`
        : null
    }
    ${
      event.state === 'scheduled'
        ? fireAt === null
          ? html`<button class="small secondary outline" onClick=${() => setFireAt(toLocalInput(event.fireAt))}>Reschedule</button>`
          : html`<form class="inline-form" onSubmit=${(e) => {
              e.preventDefault();
              run('patch', () =>
                api('PATCH', `/v1/events/${id}`, {
                  headers: ifMatch,
                  body: { fireAt: new Date(fireAt).toISOString() },
                }),
              );
            }}>
            <input type="datetime-local" step="1" name="fireAt" value=${fireAt} onInput=${(e) => setFireAt(e.currentTarget.value)} required />
            <button type="submit" class="small" aria-busy=${busy === 'patch' ? 'true' : 'false'}>Save</button>
            <button type="button" class="small secondary outline" onClick=${() => setFireAt(null)}>Back</button>
          </form>`
        : null
    }
    ${
      REPLAYABLE.has(event.state)
        ? html`<button class="small" aria-busy=${busy === 'replay' ? 'true' : 'false'} onClick=${() => run('replay', () => api('POST', `/v1/events/${id}/replay`, { headers: ifMatch }))}>Replay</button>`
        : null
    }
    <${ErrorNote} error=${error} />
  </div>`;
}

export function EventView({ id }) {
  const [override, setOverride] = useState(null);
  const [live, setLive] = useState(false);
  const load = useLoad(() => api('GET', `/v1/events/${encodeURIComponent(id)}`), [id], live ? LIVE_REFRESH_MS : 0);
  // While another event's page is left, the last data is that event's: never show it under this id.
  const loaded = load.data?.id === id ? load.data : null;
  const event = override?.id === id && (!loaded || override.version >= loaded.version) ? override : loaded;
  const nowLive = isLive(event);
  useEffect(() => setLive(nowLive), [nowLive]);
  if (!event) {
    return html`<section><${PageHead} title=${id} sub=${html`<a href="#/events">← Events</a>`} /><${ErrorNote} error=${load.error} />${load.loading ? html`<p class="muted">Loading…</p>` : null}</section>`;
  }
  return html`<section data-test="event" data-event=${event.id}>
    <${PageHead} title=${html`<span class="id">${event.id}</span> <${Badge} value=${event.state} />`} sub=${html`<a href="#/events">← Events</a> · version ${event.version}${live ? ' · following live' : ''}`}>
      <${Actions} event=${event} onChanged=${setOverride} />
      <button class="small secondary outline" onClick=${() => {
        setOverride(null);
        load.reload();
      }}>Refresh</button>
    </${PageHead}>
    <div class="grid-2">
      <section class="card">
        <h3>Details</h3>
        <${Facts}
          rows=${[
            ['Fires at', html`<${Time} iso=${event.fireAt} />`],
            event.dueAt !== event.fireAt && ['Due at', html`<${Time} iso=${event.dueAt} />`],
            ['Destination', html`<code>${destinationText(event.destination)}</code>`],
            ['Type', event.type ?? '—'],
            ['Group', event.group ?? '—'],
            ['Attempts', String(event.attempts)],
            ['Last status', event.lastStatus === null ? '—' : String(event.lastStatus)],
            event.lastError && ['Last error', html`<code class="wrap">${event.lastError}</code>`],
            ['Expires', event.expireAt ? html`<${Time} iso=${event.expireAt} />` : 'never'],
            [
              'Retry',
              event.retry
                ? `${event.retry.maxAttempts} attempts, ${event.retry.minBackoff}–${event.retry.maxBackoff} ×${event.retry.coefficient}`
                : 'destination default',
            ],
            ['Tags', html`<${KeyValues} map=${event.tags} />`],
            ['Created', html`<${Time} iso=${event.createdAt} />`],
            ['Updated', html`<${Time} iso=${event.updatedAt} />`],
          ]}
        />
      </section>
      <${Trace} key=${event.id} id=${event.id} version=${event.version} />
    </div>
    <div class="grid-2">
      <section class="card"><h3>Payload</h3><pre class="payload" data-test="payload">${jsonText(event.payload)}</pre></section>
      <section class="card"><h3>Headers</h3><${KeyValues} map=${event.headers} empty="no headers" /></section>
    </div>
  </section>`;
}
