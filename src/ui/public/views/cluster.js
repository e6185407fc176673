/** The cluster (admin): nodes, the leader and its epoch, shards per node, shards with events due. */
import { api, Badge, Empty, ErrorNote, fmtMs, html, PageHead, Time, useLoad } from '../lib.js';

function Stat({ label, value, tone }) {
  return html`<div class=${`stat ${tone ? `tone-text-${tone}` : ''}`}><div class="stat-value">${value}</div><div class="stat-label">${label}</div></div>`;
}

export function ClusterView() {
  const load = useLoad(() => api('GET', '/v1/cluster'), [], 5_000);
  const c = load.data;
  return html`<section>
    <${PageHead} title="Cluster" sub=${c ? `As node ${c.nodeId} sees it. Refreshes every 5 s.` : ''}>
      <button class="small secondary outline" onClick=${load.reload}>Refresh</button>
    </${PageHead}>
    <${ErrorNote} error=${load.error} />
    ${
      c
        ? html`<div class="stats" data-test="cluster">
            <${Stat} label="mode" value=${c.mode} />
            <${Stat} label="leader" value=${c.leader ? c.leader.nodeId : c.mode === 'single' ? 'not needed' : 'none'} tone=${c.leader || c.mode === 'single' ? null : 'bad'} />
            <${Stat} label="epoch" value=${c.leader ? c.leader.epoch : '—'} />
            <${Stat} label="shards" value=${c.shardCount} />
            <${Stat} label="unassigned" value=${c.unassignedShards} tone=${c.unassignedShards > 0 ? 'bad' : 'ok'} />
            <${Stat} label="clock skew" value=${fmtMs(Math.abs(c.clockSkewMs))} tone=${Math.abs(c.clockSkewMs) > 1000 ? 'warn' : null} />
          </div>
          <section class="card">
            <h3>Nodes</h3>
            <div class="table-wrap"><table class="striped data">
              <thead><tr><th>Node</th><th>Status</th><th class="num">Shards</th><th class="num">Heartbeat</th><th>Started</th></tr></thead>
              <tbody>${c.nodes.map(
                (n) => html`<tr data-node=${n.id}>
                  <td><strong>${n.id}</strong> ${c.leader?.nodeId === n.id ? html`<span class="badge tone-info">leader</span>` : null} ${n.id === c.nodeId ? html`<span class="muted small">(answered)</span>` : null}</td>
                  <td><${Badge} value=${n.live ? 'live' : 'down'} /></td>
                  <td class="num">${n.shards}</td>
                  <td class="num">${fmtMs(n.heartbeatAgeMs)} ago</td>
                  <td><${Time} iso=${n.startedAt} /></td>
                </tr>`,
              )}</tbody>
            </table></div>
          </section>
          <section class="card">
            <h3>Shards with events due</h3>
            ${
              c.lag.length === 0
                ? html`<p class="muted">None: every shard is keeping up.</p>`
                : html`<div class="table-wrap"><table class="striped data">
                  <thead><tr><th class="num">Shard</th><th>Owner</th><th class="num">Due events</th><th class="num">Oldest late by</th></tr></thead>
                  <tbody>${c.lag.map((l) => html`<tr><td class="num">${l.shard}</td><td>${l.nodeId ?? html`<span class="bad">unowned</span>`}</td><td class="num">${l.dueEvents}</td><td class=${`num ${l.lagMs > 1000 ? 'bad' : ''}`}>${fmtMs(l.lagMs)}</td></tr>`)}</tbody>
                </table></div>`
            }
          </section>`
        : html`<${Empty}>${load.loading ? 'Loading…' : ''}</${Empty}>`
    }
  </section>`;
}
