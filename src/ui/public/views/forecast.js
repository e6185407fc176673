/**
 * The due-load forecast (GET /v1/forecast) as a bar chart (uPlot, canvas) with the API's spike
 * buckets drawn in red and listed below. A tenant sees its own events; the admin, every tenant's.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, Empty, ErrorNote, fmtTime, html, PageHead, qs, useLoad } from '../lib.js';

/** uPlot's minified build, loaded by index.html as a classic script (its ES module build is not minified). */
const uPlot = globalThis.uPlot;

const WINDOWS = [
  ['1h', '1m', 'next hour'],
  ['6h', '5m', 'next 6 hours'],
  ['24h', '15m', 'next 24 hours'],
  ['7d', '2h', 'next 7 days'],
];
const CHART_HEIGHT = 300;
const BREAKDOWN_SHOWN = 10;

function Chart({ forecast }) {
  const el = useRef(null);
  useEffect(() => {
    const x = forecast.buckets.map((b) => new Date(b.at).getTime() / 1000);
    const normal = forecast.buckets.map((b) => (b.spike ? null : b.count));
    const spike = forecast.buckets.map((b) => (b.spike ? b.count : null));
    const bars = uPlot.paths.bars({ size: [0.8, 40], align: 1 });
    const opts = {
      width: Math.max(320, el.current.clientWidth),
      height: CHART_HEIGHT,
      cursor: { points: { show: false } },
      legend: { show: true },
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.1))] } },
      axes: [
        { stroke: '#5b6475', grid: { stroke: '#eef0f4' } },
        { stroke: '#5b6475', grid: { stroke: '#eef0f4' }, size: 50 },
      ],
      series: [
        { label: 'bucket start' },
        {
          label: 'events due',
          stroke: '#3b6fd8',
          fill: 'rgba(59,111,216,0.55)',
          paths: bars,
          points: { show: false },
          width: 0,
        },
        {
          label: 'spike',
          stroke: '#d83b3b',
          fill: 'rgba(216,59,59,0.85)',
          paths: bars,
          points: { show: false },
          width: 0,
        },
      ],
    };
    const plot = new uPlot(opts, [x, normal, spike], el.current);
    const resize = () => plot.setSize({ width: Math.max(320, el.current.clientWidth), height: CHART_HEIGHT });
    addEventListener('resize', resize);
    return () => {
      removeEventListener('resize', resize);
      plot.destroy();
    };
  }, [forecast]);
  return html`<div class="chart" ref=${el} data-test="forecast-chart"></div>`;
}

/** The window's events per destination (tenant) or per tenant (admin), largest first. */
function Breakdown({ forecast, what, names }) {
  const totals = new Map();
  for (const b of forecast.buckets)
    for (const [k, n] of Object.entries(b.by ?? {})) totals.set(k, (totals.get(k) ?? 0) + n);
  const rows = [...totals.entries()].sort((a, b) => b[1] - a[1]).slice(0, BREAKDOWN_SHOWN);
  return html`<section class="card">
    <h3>By ${what}</h3>
    ${
      rows.length === 0
        ? html`<p class="muted">Nothing scheduled in this window.</p>`
        : html`<table class="data breakdown"><tbody>${rows.map(([k, n]) => html`<tr><td class="ellipsis" title=${k}>${names?.get(k) ?? k}${names?.has(k) ? html` <small class="muted">${k}</small>` : null}</td><td class="num">${n}</td><td class="bar"><progress value=${n} max=${forecast.total}></progress></td></tr>`)}</tbody></table>`
    }
  </section>`;
}

export function ForecastView({ role }) {
  const [w, setW] = useState(0);
  const [to, bucket, label] = WINDOWS[w];
  const by = role === 'admin' ? 'tenant' : 'destination';
  const load = useLoad(() => api('GET', `/v1/forecast${qs({ to, bucket, by })}`), [w], 30_000);
  // The admin's split is by tenant id: the tenants' names beside them.
  const tenants = useLoad(() => (role === 'admin' ? api('GET', '/v1/tenants') : Promise.resolve(null)), [role]);
  const names = tenants.data ? new Map(tenants.data.tenants.map((t) => [t.id, t.name])) : null;
  const f = load.data;
  const peak = f ? Math.max(0, ...f.buckets.map((b) => b.count)) : 0;
  return html`<section>
    <${PageHead} title="Forecast" sub=${role === 'admin' ? 'Scheduled events of every tenant, by due time.' : 'Your scheduled events, by due time.'}>
      <div role="group" class="segmented">
        ${WINDOWS.map(([t, , l], i) => html`<button class=${`small ${i === w ? '' : 'outline secondary'}`} onClick=${() => setW(i)} title=${l}>${t}</button>`)}
      </div>
      <button class="small secondary outline" onClick=${load.reload}>Refresh</button>
    </${PageHead}>
    <${ErrorNote} error=${load.error} />
    ${
      f
        ? html`<div class="stats">
            <div class="stat"><div class="stat-value">${f.total}</div><div class="stat-label">events due in the ${label}</div></div>
            <div class="stat"><div class="stat-value">${peak}</div><div class="stat-label">busiest ${f.bucket} bucket</div></div>
            <div class=${`stat ${f.spikes.length ? 'tone-text-bad' : 'tone-text-ok'}`}><div class="stat-value" data-test="spike-count">${f.spikes.length}</div><div class="stat-label">spike${f.spikes.length === 1 ? '' : 's'}</div></div>
          </div>
          <section class="card"><${Chart} forecast=${f} /></section>
          <div class="grid-2">
          <section class="card">
            <h3>Spikes</h3>
            <p class="muted small">A bucket with at least 10 events and at least 4× the median of the 5 buckets either side.</p>
            ${
              f.spikes.length === 0
                ? html`<p class="muted">No spikes in the ${label}.</p>`
                : html`<ul class="spikes" data-test="spikes">${f.buckets.filter((b) => b.spike).map((b) => html`<li><span class="badge tone-bad">spike</span> ${fmtTime(b.at)} · <strong>${b.count}</strong> events in ${f.bucket}</li>`)}</ul>`
            }
          </section>
          <${Breakdown} forecast=${f} what=${by} names=${names} />
          </div>`
        : html`<${Empty}>${load.loading ? 'Loading…' : ''}</${Empty}>`
    }
  </section>`;
}
