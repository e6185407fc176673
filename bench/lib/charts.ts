/**
 * One SVG per firing scenario (fire, precision @ R, burst, backlog), every system of the run in
 * it: on the left the lateness CDF (log scale: which share of deliveries came within x ms of
 * their due time), on the right deliveries per second over time from the first due time.
 * Plain SVG text, no dependencies.
 */
import { writeFileSync } from 'node:fs';
import type { ScenarioResult } from './report.ts';
import type { ChartSeries } from './stats.ts';

const COLORS: Record<string, string> = {
  'belfry-sqlite': '#1f77b4',
  'belfry-postgres': '#2ca02c',
  bullmq: '#d62728',
  'pg-boss': '#9467bd',
  'graphile-worker': '#ff7f0e',
};
const W = 1000;
const H = 450;
const PANEL = { top: 90, bottom: 50, left: 70, width: 380, gap: 110 };
const PLOT_H = H - PANEL.top - PANEL.bottom;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
const fmt = (v: number) =>
  v >= 1000
    ? `${(v / 1000).toLocaleString('en-US', { maximumFractionDigits: 1 })}k`
    : v.toLocaleString('en-US', { maximumFractionDigits: 1 });

/** A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten. */
function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 5, 10].map((m) => m * p).find((m) => m >= v)!;
}

function axes(
  x0: number,
  title: string,
  xTicks: [number, string][],
  yTicks: [number, string][],
  xLabel: string,
): string {
  const parts = [
    `<text x="${x0 + PANEL.width / 2}" y="${PANEL.top - 14}" text-anchor="middle" font-weight="bold">${esc(title)}</text>`,
  ];
  parts.push(`<rect x="${x0}" y="${PANEL.top}" width="${PANEL.width}" height="${PLOT_H}" fill="none" stroke="#999"/>`);
  for (const [x, label] of xTicks) {
    parts.push(`<line x1="${x}" x2="${x}" y1="${PANEL.top}" y2="${PANEL.top + PLOT_H}" stroke="#eee"/>`);
    parts.push(`<text x="${x}" y="${PANEL.top + PLOT_H + 16}" text-anchor="middle">${esc(label)}</text>`);
  }
  for (const [y, label] of yTicks) {
    parts.push(`<line x1="${x0}" x2="${x0 + PANEL.width}" y1="${y}" y2="${y}" stroke="#eee"/>`);
    parts.push(`<text x="${x0 - 6}" y="${y + 4}" text-anchor="end">${esc(label)}</text>`);
  }
  parts.push(`<text x="${x0 + PANEL.width / 2}" y="${H - 12}" text-anchor="middle">${esc(xLabel)}</text>`);
  return parts.join('\n');
}

function cdfPanel(series: { key: string; chart: ChartSeries }[]): string {
  const x0 = PANEL.left;
  const maxMs = niceMax(Math.max(10, ...series.flatMap((s) => s.chart.cdf.map(([ms]) => ms))));
  const decades = Math.log10(maxMs);
  const x = (ms: number) => x0 + (Math.log10(Math.max(1, ms)) / decades) * PANEL.width;
  const y = (q: number) => PANEL.top + (1 - q) * PLOT_H;
  const xTicks: [number, string][] = [];
  for (let d = 0; d <= Math.ceil(decades); d++) if (10 ** d <= maxMs) xTicks.push([x(10 ** d), `${fmt(10 ** d)} ms`]);
  const yTicks: [number, string][] = [0, 0.25, 0.5, 0.75, 0.9, 1].map((q) => [y(q), `${q * 100}%`]);
  const lines = series.map(({ key, chart }) => {
    const pts = chart.cdf.map(([ms, q]) => `${x(ms).toFixed(1)},${y(q).toFixed(1)}`).join(' ');
    return `<polyline fill="none" stroke="${COLORS[key] ?? '#333'}" stroke-width="2" points="${pts}"/>`;
  });
  return [
    axes(
      x0,
      'lateness: share delivered within x',
      xTicks,
      yTicks,
      'lateness (receivedAt − fireAt), log scale; ≤ 1 ms at the left edge',
    ),
    ...lines,
  ].join('\n');
}

function timelinePanel(series: { key: string; chart: ChartSeries }[]): string {
  const x0 = PANEL.left + PANEL.width + PANEL.gap;
  const spanS = Math.max(
    1,
    ...series.map((s) => (s.chart.timeline.perSecond.length * s.chart.timeline.bucketMs) / 1000),
  );
  const maxRate = niceMax(Math.max(1, ...series.flatMap((s) => s.chart.timeline.perSecond)));
  const xMax = niceMax(spanS);
  const x = (s: number) => x0 + (s / xMax) * PANEL.width;
  const y = (r: number) => PANEL.top + (1 - r / maxRate) * PLOT_H;
  const xTicks: [number, string][] = [0, 0.25, 0.5, 0.75, 1].map((f) => [x(f * xMax), `${fmt(f * xMax)} s`]);
  const yTicks: [number, string][] = [0, 0.25, 0.5, 0.75, 1].map((f) => [y(f * maxRate), `${fmt(f * maxRate)}/s`]);
  const lines = series.map(({ key, chart }) => {
    const { bucketMs, perSecond } = chart.timeline;
    const pts = perSecond.map((r, i) => `${x(((i + 0.5) * bucketMs) / 1000).toFixed(1)},${y(r).toFixed(1)}`).join(' ');
    return `<polyline fill="none" stroke="${COLORS[key] ?? '#333'}" stroke-width="1.5" points="${pts}"/>`;
  });
  return [axes(x0, 'deliveries per second', xTicks, yTicks, 'seconds since the first due time'), ...lines].join('\n');
}

function legend(results: ScenarioResult[]): string {
  let x = PANEL.left;
  return results
    .map((r) => {
      const name = r.label.split(' · ').slice(1).join(' · ');
      const item = `<rect x="${x}" y="42" width="14" height="4" fill="${COLORS[r.system] ?? '#333'}"/><text x="${x + 20}" y="48">${esc(name)}</text>`;
      x += 34 + name.length * 6.6;
      return item;
    })
    .join('\n');
}

export function renderChart(title: string, results: ScenarioResult[]): string {
  const series = results.filter((r) => r.chart).map((r) => ({ key: r.system, chart: r.chart! }));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${PANEL.left}" y="22" font-size="15" font-weight="bold">${esc(title)}</text>`,
    legend(results.filter((r) => r.chart)),
    cdfPanel(series),
    timelinePanel(series),
    '</svg>',
  ].join('\n');
}

/** Writes <stem>-<scenario>.svg for each scenario with chart data; returns the paths. */
export function renderCharts(stem: string, results: ScenarioResult[]): string[] {
  const scenarios = [...new Set(results.filter((r) => r.chart).map((r) => r.scenario))];
  return scenarios.map((scenario) => {
    const file = `${stem}-${scenario.replace('@', '-')}.svg`;
    const group = results.filter((r) => r.scenario === scenario && r.chart);
    writeFileSync(file, renderChart(group[0].label.split(' · ')[0], group) + '\n');
    return file;
  });
}
