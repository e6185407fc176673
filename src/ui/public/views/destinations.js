/**
 * Destinations with their health: circuit state, recent success rate, p99 duration, queue depth
 * and in flight (GET /v1/destinations/{name}/health: the answering node's queue), refreshed
 * every few seconds. Secrets are never returned by the API, so none can be shown.
 */
import { api, Badge, Empty, ErrorNote, fmtMs, fmtPercent, html, PageHead, useLoad } from '../lib.js';

const REFRESH_MS = 5_000;

function target(d) {
  if (d.kind === 'http') return d.url;
  if (d.kind === 'kafka') return `${d.topic} @ ${d.brokers?.join(', ')}`;
  if (d.kind === 'nats') return `${d.subject} @ ${d.servers?.join(', ')}`;
  if (d.kind === 'amqp') return `${d.exchange || '(default)'} ${d.routingKey ?? ''} @ ${d.url}`;
  if (d.kind === 'redis') return `${d.stream} @ ${d.url}`;
  if (d.kind === 'pull') return `pulled by consumers (POST /v1/destinations/${d.name}/claim)`;
  return '';
}

async function loadAll() {
  const { destinations } = await api('GET', '/v1/destinations');
  const health = await Promise.all(
    destinations.map((d) => api('GET', `/v1/destinations/${encodeURIComponent(d.name)}/health`).catch(() => null)),
  );
  return destinations.map((d, i) => ({ d, h: health[i] }));
}

function rateClass(r) {
  if (r === null || r === undefined) return 'muted';
  return r >= 0.99 ? 'ok' : r >= 0.9 ? 'warn' : 'bad';
}

export function DestinationsView() {
  const load = useLoad(loadAll, [], REFRESH_MS);
  const rows = load.data ?? [];
  const node = rows.find((r) => r.h)?.h?.nodeId;
  return html`<section>
    <${PageHead} title="Destinations" sub=${`Health as node ${node ?? '…'} sees it: its queue for each destination and its last 200 attempts. Refreshes every 5 s.`}>
      <button class="small secondary outline" onClick=${load.reload}>Refresh</button>
    </${PageHead}>
    <${ErrorNote} error=${load.error} />
    ${
      rows.length === 0
        ? html`<${Empty}>${load.loading ? 'Loading…' : 'No destinations. Create one with PUT /v1/destinations/{name}.'}</${Empty}>`
        : html`<div class="table-wrap"><table class="striped data">
          <thead><tr><th>Name</th><th>Kind</th><th>Target</th><th>Circuit</th><th class="num">Success</th><th class="num">p99</th><th class="num">Queued</th><th class="num">In flight</th><th class="num">Attempts</th><th>Limits</th></tr></thead>
          <tbody>${rows.map(({ d, h }) => {
            const q = h?.queue;
            return html`<tr data-destination=${d.name}>
              <td><strong>${d.name}</strong></td>
              <td>${d.kind}</td>
              <td class="ellipsis" title=${target(d)}><code>${target(d)}</code></td>
              <td>${q ? html`<${Badge} value=${q.circuit} />` : html`<span class="muted" title="no delivery on this node since it started">idle</span>`}</td>
              <td class=${`num ${rateClass(q?.successRate)}`}>${fmtPercent(q?.successRate)}</td>
              <td class="num">${fmtMs(q?.p99DurationMs)}</td>
              <td class="num">${q ? q.claimed : '—'}</td>
              <td class="num">${q ? `${q.inFlight} / ${d.maxConcurrency}` : '—'}</td>
              <td class="num">${q ? q.deliveries : '—'}</td>
              <td class="small muted">timeout ${d.timeout}${d.rateLimit ? ` · ${d.rateLimit.perSecond}/s` : ''}${d.retry ? ` · ${d.retry.maxAttempts} tries` : ''}</td>
            </tr>`;
          })}</tbody>
        </table></div>`
    }
  </section>`;
}
