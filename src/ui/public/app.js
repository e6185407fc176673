/**
 * The dashboard's shell: sign-in, the navigation of the signed-in role, and the hash router.
 * A tenant key sees its own events, archive, destinations, schedules, sources and forecast; the
 * admin key sees tenants, the cluster and the forecast of every tenant.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, html, navigate, onUnauthorized, session, useRoute } from './lib.js';
import { ArchiveView } from './views/archive.js';
import { ClusterView } from './views/cluster.js';
import { DestinationsView } from './views/destinations.js';
import { EventView } from './views/event.js';
import { EventsView } from './views/events.js';
import { ForecastView } from './views/forecast.js';
import { SchedulesView } from './views/schedules.js';
import { SourcesView } from './views/sources.js';
import { TenantsView } from './views/tenants.js';

const TENANT_NAV = [
  ['events', 'Events'],
  ['archive', 'Archive'],
  ['destinations', 'Destinations'],
  ['schedules', 'Schedules'],
  ['sources', 'Sources'],
  ['forecast', 'Forecast'],
];
const ADMIN_NAV = [
  ['cluster', 'Cluster'],
  ['tenants', 'Tenants'],
  ['forecast', 'Forecast'],
];

/** Which kind of key this is: a tenant key reads /v1/limits, the admin key reads /v1/tenants. */
async function identify(key) {
  try {
    await api('GET', '/v1/limits', { key });
    return 'tenant';
  } catch (err) {
    if (err.status !== 403) throw err;
  }
  await api('GET', '/v1/tenants', { key });
  return 'admin';
}

function SignIn({ onSignedIn, notice }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState(notice ?? null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const role = await identify(key.trim());
      session.set(key.trim(), role);
      onSignedIn(role);
    } catch (err) {
      setError(
        err.status === 401 || err.status === 403 ? 'That key was not accepted: check it and try again.' : err.message,
      );
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin">
    <article>
      <header><h1 class="brand-big">Belfry</h1><p class="muted">Sign in with a tenant API key, or the admin key for the cluster and tenants.</p></header>
      <form onSubmit=${submit}>
        <label for="key">API key</label>
        <input id="key" name="key" type="password" autocomplete="off" required placeholder="bk_…" value=${key} onInput=${(e) => setKey(e.currentTarget.value)} />
        ${error ? html`<div class="note note-error" role="alert" data-test="signin-error">${error}</div>` : null}
        <button type="submit" aria-busy=${busy ? 'true' : 'false'} disabled=${busy}>Sign in</button>
      </form>
      <footer><small class="muted">The key stays in this tab (sessionStorage) and is sent only in the Authorization header.</small></footer>
    </article>
  </main>`;
}

function View({ role, route }) {
  const [first, second] = route.path;
  if (role === 'admin') {
    if (first === 'tenants') return html`<${TenantsView} />`;
    if (first === 'forecast') return html`<${ForecastView} role="admin" />`;
    return html`<${ClusterView} />`;
  }
  switch (first) {
    case 'events':
      return second ? html`<${EventView} id=${second} />` : html`<${EventsView} query=${route.query} />`;
    case 'archive':
      return html`<${ArchiveView} query=${route.query} />`;
    case 'destinations':
      return html`<${DestinationsView} />`;
    case 'schedules':
      return html`<${SchedulesView} />`;
    case 'sources':
      return html`<${SourcesView} />`;
    case 'forecast':
      return html`<${ForecastView} role="tenant" />`;
    default:
      return html`<${EventsView} query=${route.query} />`;
  }
}

function Shell({ role, onSignOut }) {
  const route = useRoute();
  const nav = role === 'admin' ? ADMIN_NAV : TENANT_NAV;
  // A path this role has no tab for shows its first screen (View's defaults), so that tab is marked.
  const current = nav.some(([path]) => path === route.path[0]) ? route.path[0] : nav[0][0];
  return html`<div class="shell">
    <nav class="topbar">
      <a class="brand" href=${`#/${nav[0][0]}`}>Belfry</a>
      <ul class="tabs">
        ${nav.map(([path, label]) => html`<li><a href=${`#/${path}`} class=${current === path ? 'active' : ''} aria-current=${current === path ? 'page' : undefined}>${label}</a></li>`)}
      </ul>
      <div class="who">
        <span class=${`badge tone-${role === 'admin' ? 'warn' : 'info'}`}>${role === 'admin' ? 'admin' : 'tenant'}</span>
        <button class="outline secondary small" onClick=${onSignOut}>Sign out</button>
      </div>
    </nav>
    <main class="container-fluid content"><${View} role=${role} route=${route} /></main>
  </div>`;
}

function App() {
  const [role, setRole] = useState(session.key ? session.role : null);
  const [notice, setNotice] = useState(null);
  useEffect(
    () =>
      onUnauthorized(() => {
        session.clear();
        setNotice('The key is no longer accepted: sign in again.');
        setRole(null);
      }),
    [],
  );
  if (!role)
    return html`<${SignIn} notice=${notice} onSignedIn=${(r) => {
      setNotice(null);
      setRole(r);
      navigate(r === 'admin' ? 'cluster' : 'events');
    }} />`;
  return html`<${Shell} role=${role} onSignOut=${() => {
    session.clear();
    setRole(null);
    location.hash = '';
  }} />`;
}

const root = document.getElementById('app');
root.textContent = '';
render(html`<${App} />`, root);
