/** Tenants (admin): who they are and their settings. Keys and signing secrets are never listed. */
import { api, Empty, ErrorNote, html, PageHead, Time, useLoad } from '../lib.js';

export function TenantsView() {
  const load = useLoad(() => api('GET', '/v1/tenants'), []);
  const tenants = load.data?.tenants ?? [];
  return html`<section>
    <${PageHead} title="Tenants" sub="Create tenants and their keys with the admin API (POST /v1/tenants, POST /v1/tenants/{id}/keys).">
      <button class="small secondary outline" onClick=${load.reload}>Refresh</button>
    </${PageHead}>
    <${ErrorNote} error=${load.error} />
    ${
      tenants.length === 0
        ? html`<${Empty}>${load.loading ? 'Loading…' : 'No tenants.'}</${Empty}>`
        : html`<div class="table-wrap"><table class="striped data">
          <thead><tr><th>Tenant</th><th>Id</th><th>Durability</th><th>Missed after</th><th>Created</th></tr></thead>
          <tbody>${tenants.map((t) => html`<tr><td><strong>${t.name}</strong></td><td><code>${t.id}</code></td><td>${t.durability}</td><td>${t.missedAfter ?? html`<span class="muted">never</span>`}</td><td><${Time} iso=${t.createdAt} /></td></tr>`)}</tbody>
        </table></div>`
    }
  </section>`;
}
