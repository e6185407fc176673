/** Sources: Kafka topics read for schedule requests, with their state, lag and counts. Credentials are never returned. */
import { api, Badge, Empty, ErrorNote, html, PageHead, Time, useLoad } from '../lib.js';

export function SourcesView() {
  const load = useLoad(() => api('GET', '/v1/sources?limit=100'), [], 10_000);
  const sources = load.data?.sources ?? [];
  return html`<section>
    <${PageHead} title="Sources" sub="Kafka topics Belfry reads schedule requests from.">
      <button class="small secondary outline" onClick=${load.reload}>Refresh</button>
    </${PageHead}>
    <${ErrorNote} error=${load.error} />
    ${
      sources.length === 0
        ? html`<${Empty}>${load.loading ? 'Loading…' : 'No sources.'}</${Empty}>`
        : html`<div class="table-wrap"><table class="striped data">
          <thead><tr><th>Name</th><th>Topic</th><th>Brokers</th><th>State</th><th class="num">Lag</th><th class="num">Accepted</th><th class="num">Rejected</th><th>Last error</th></tr></thead>
          <tbody>${sources.map((s) => {
            const last = s.lastErrors[s.lastErrors.length - 1];
            return html`<tr data-source=${s.name}>
              <td><strong>${s.name}</strong><div class="muted small">group ${s.groupId}</div></td>
              <td><code>${s.topic}</code>${s.deadLetterTopic ? html`<div class="muted small">dead letters: ${s.deadLetterTopic}</div>` : null}</td>
              <td class="ellipsis small">${s.brokers.join(', ')}</td>
              <td><${Badge} value=${s.state} tone=${s.state === 'running' ? 'ok' : undefined} /></td>
              <td class="num">${s.lag ?? '—'}</td>
              <td class="num">${s.accepted}</td>
              <td class=${`num ${s.rejected > 0 ? 'warn' : ''}`}>${s.rejected}</td>
              <td class="small">${last ? html`<${Time} iso=${last.at} /><div><code class="wrap">${last.message}</code></div>` : html`<span class="muted">none</span>`}</td>
            </tr>`;
          })}</tbody>
        </table></div>`
    }
  </section>`;
}
