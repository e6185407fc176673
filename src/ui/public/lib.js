/**
 * What every view shares: the html tag (htm bound to Preact), the API client, the hash router,
 * a data-loading hook and small formatting components.
 *
 * Every value from the API is rendered as a text child or an attribute value, which Preact sets
 * as text; nothing here sets innerHTML, so a payload of `<img onerror=...>` is shown, not run.
 */
import { h } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';

export const html = htm.bind(h);

const KEY_STORAGE = 'belfry.key';
const ROLE_STORAGE = 'belfry.role';

/** The signed-in key lives in this tab's sessionStorage only; it goes out in the Authorization header, never in a cookie. */
export const session = {
  get key() {
    return sessionStorage.getItem(KEY_STORAGE);
  },
  get role() {
    return sessionStorage.getItem(ROLE_STORAGE);
  },
  set(key, role) {
    sessionStorage.setItem(KEY_STORAGE, key);
    sessionStorage.setItem(ROLE_STORAGE, role);
  },
  clear() {
    sessionStorage.removeItem(KEY_STORAGE);
    sessionStorage.removeItem(ROLE_STORAGE);
  },
};

export class ApiError extends Error {
  constructor(status, body) {
    const detail = body?.details?.[0];
    const where = detail?.field ? ` (${detail.field}: ${detail.message})` : '';
    super(`${body?.message ?? `HTTP ${status}`}${where}`);
    this.status = status;
    this.body = body;
  }
}

/** Listeners told when a request comes back 401: the key no longer works. */
const unauthorizedListeners = new Set();
export function onUnauthorized(fn) {
  unauthorizedListeners.add(fn);
  return () => unauthorizedListeners.delete(fn);
}

/** One API call with the session's key (or `key`, at sign-in). Resolves with the JSON body; rejects with ApiError. */
export async function api(method, path, { body, headers, key } = {}) {
  const res = await fetch(path, {
    method,
    credentials: 'omit',
    cache: 'no-store',
    headers: {
      authorization: `Bearer ${key ?? session.key ?? ''}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { message: text.slice(0, 200) };
  }
  if (!res.ok) {
    if (res.status === 401 && key === undefined) for (const fn of unauthorizedListeners) fn();
    throw new ApiError(res.status, data);
  }
  return data;
}

/** A query string from an object, leaving out empty values. */
export function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}

/** The current route: `#/events/abc?state=archived` → { path: ['events', 'abc'], query: {state: 'archived'} }. */
export function parseRoute(hash) {
  const raw = hash.replace(/^#\/?/, '');
  const [path, query = ''] = raw.split('?');
  return {
    path: path.split('/').filter(Boolean).map(decodeURIComponent),
    query: Object.fromEntries(new URLSearchParams(query)),
  };
}

export function useRoute() {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function navigate(path, query = {}) {
  location.hash = `#/${path}${qs(query)}`;
}

/**
 * Loads `fn()` when `deps` change (and every `refreshMs` while it is given), keeping the last data
 * while a reload runs. Returns { data, error, loading, reload }.
 */
export function useLoad(fn, deps, refreshMs) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const seq = useRef(0);
  const reload = useCallback(() => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    fn().then(
      (data) => mine === seq.current && setState({ data, error: null, loading: false }),
      (error) => mine === seq.current && setState((s) => ({ data: s.data, error, loading: false })),
    );
  }, deps);
  useEffect(reload, [reload]);
  useEffect(() => {
    if (!refreshMs) return undefined;
    const t = setInterval(reload, refreshMs);
    return () => clearInterval(t);
  }, [reload, refreshMs]);
  return { ...state, reload };
}

// ---- formatting ----

export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  const pad = (n, w = 2) => String(n).padStart(w, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function fmtRelative(iso, now = Date.now()) {
  if (!iso) return '';
  const ms = new Date(iso).getTime() - now;
  const abs = Math.abs(ms);
  const unit =
    abs < 60_000
      ? [1000, 's']
      : abs < 3_600_000
        ? [60_000, 'm']
        : abs < 86_400_000
          ? [3_600_000, 'h']
          : [86_400_000, 'd'];
  const n = Math.round(abs / unit[0]);
  if (n === 0) return 'now';
  return ms > 0 ? `in ${n}${unit[1]}` : `${n}${unit[1]} ago`;
}

export function fmtMs(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

export function fmtPercent(x) {
  return x === null || x === undefined ? '—' : `${(x * 100).toFixed(x === 1 || x === 0 ? 0 : 1)}%`;
}

export function destinationText(d) {
  return typeof d === 'string' ? d : (d?.url ?? '');
}

/** Pretty JSON for display as text. */
export function jsonText(value) {
  return JSON.stringify(value, null, 2);
}

// ---- components ----

const STATE_TONE = {
  scheduled: 'info',
  executing: 'run',
  awaiting_retry: 'warn',
  succeeded: 'ok',
  discarded: 'bad',
  archived: 'muted',
  canceled: 'muted',
  closed: 'ok',
  open: 'bad',
  half_open: 'warn',
  running: 'run',
  starting: 'info',
  failing: 'bad',
  paused: 'warn',
  active: 'ok',
  live: 'ok',
  down: 'bad',
  done: 'ok',
  failed: 'bad',
};

export function Badge({ value, tone }) {
  return html`<span class=${`badge tone-${tone ?? STATE_TONE[value] ?? 'muted'}`}>${String(value).replace('_', ' ')}</span>`;
}

export function Time({ iso }) {
  if (!iso) return html`<span class="muted">—</span>`;
  return html`<span title=${iso}>${fmtTime(iso)} <small class="muted">${fmtRelative(iso)}</small></span>`;
}

export function ErrorNote({ error }) {
  if (!error) return null;
  return html`<div class="note note-error" role="alert">${error.message ?? String(error)}</div>`;
}

export function Empty({ children }) {
  return html`<div class="empty">${children}</div>`;
}

export function PageHead({ title, sub, children }) {
  return html`<header class="page-head">
    <div><h2>${title}</h2>${sub ? html`<p class="muted">${sub}</p>` : null}</div>
    <div class="page-actions">${children}</div>
  </header>`;
}

/** Key-value rows of a definition grid. */
export function Facts({ rows }) {
  return html`<dl class="facts">${rows.filter(Boolean).map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>`;
}

export function KeyValues({ map, empty = 'none' }) {
  const entries = Object.entries(map ?? {});
  if (entries.length === 0) return html`<span class="muted">${empty}</span>`;
  return html`<table class="kv"><tbody>${entries.map(([k, v]) => html`<tr><th>${k}</th><td><code>${v}</code></td></tr>`)}</tbody></table>`;
}
