/**
 * The side-by-side table: one row per figure, one column per system, every figure from the same
 * run. Throughput figures that a machine limit bounds also show their share of it, e.g.
 * "52,000 (61%)" of the raw insert rate of the same database.
 */
import type { ScenarioResult } from './report.ts';

const COLUMNS: { key: string; label: string; db: 'sqlite' | 'postgres' | 'redis' }[] = [
  { key: 'belfry-sqlite', label: 'Belfry · SQLite', db: 'sqlite' },
  { key: 'belfry-postgres', label: 'Belfry · PostgreSQL', db: 'postgres' },
  { key: 'bullmq', label: 'BullMQ · Redis', db: 'redis' },
  { key: 'pg-boss', label: 'pg-boss · PostgreSQL', db: 'postgres' },
  { key: 'graphile-worker', label: 'graphile-worker · PostgreSQL', db: 'postgres' },
];

type Limit = 'insert' | 'http';

interface Row {
  scenario: string;
  metric: string;
  label: (r: ScenarioResult | undefined) => string;
  /** Shown as value / scale (ms → s). */
  scale?: number;
  unit?: string;
  limit?: Limit;
}

const n = (r: ScenarioResult | undefined, key = 'n') => (typeof r?.options[key] === 'number' ? (r.options[key] as number).toLocaleString('en-US') : '?');

function precisionRows(rate: number): Row[] {
  const at = `precision @ ${rate.toLocaleString('en-US')}/s`;
  return [
    { scenario: `precision@${rate}`, metric: 'lateness p50', label: () => `${at}: lateness p50`, unit: 'ms' },
    { scenario: `precision@${rate}`, metric: 'lateness p99', label: () => `${at}: lateness p99`, unit: 'ms' },
    { scenario: `precision@${rate}`, metric: 'lateness max', label: () => `${at}: lateness max`, unit: 'ms' },
    { scenario: `precision@${rate}`, metric: 'undelivered', label: () => `${at}: undelivered` },
  ];
}

/** The rows, precision ones for each rate the results hold. */
function rows(results: ScenarioResult[]): Row[] {
  const rates = [...new Set(results.filter((r) => r.scenario.startsWith('precision@')).map((r) => Number(r.scenario.slice('precision@'.length))))].sort((a, b) => a - b);
  const at = ROWS.findIndex((r) => r.scenario === 'burst');
  return [...ROWS.slice(0, at), ...rates.flatMap(precisionRows), ...ROWS.slice(at)];
}

const ROWS: Row[] = [
  { scenario: 'ingest', metric: 'batch events/s', label: () => 'ingest: events/s, batches of 1,000 (4 in flight)', limit: 'insert' },
  { scenario: 'ingest', metric: 'single requests/s', label: () => 'ingest: events/s, one per request (64 clients)' },
  { scenario: 'ingest', metric: 'single latency p99', label: () => 'ingest: one-event request p99', unit: 'ms' },
  { scenario: 'fire', metric: 'deliveries/s', label: (r) => `fire: ${n(r)} due at once, deliveries/s`, limit: 'http' },
  { scenario: 'fire', metric: 'due → last delivery', label: () => 'fire: due → last delivery', scale: 1000, unit: 's' },
  { scenario: 'fire', metric: 'undelivered', label: () => 'fire: undelivered' },
  { scenario: 'fire', metric: 'duplicates', label: () => 'fire: duplicates' },
  { scenario: 'burst', metric: 'minute end → last delivery', label: (r) => `burst: ${n(r)} due in one minute, minute end → last delivery`, unit: 's' },
  { scenario: 'burst', metric: 'deliveries/s', label: () => 'burst: deliveries/s', limit: 'http' },
  { scenario: 'burst', metric: 'lateness p99', label: () => 'burst: lateness p99', scale: 1000, unit: 's' },
  { scenario: 'burst', metric: 'duplicates', label: () => 'burst: duplicates' },
  { scenario: 'backlog', metric: 'fire deliveries/s', label: (r) => `backlog of ${n(r, 'backlog')}: fire deliveries/s`, limit: 'http' },
  { scenario: 'backlog', metric: 'fire undelivered', label: () => 'backlog: fire undelivered (after 60 s)' },
  { scenario: 'backlog', metric: 'precision lateness p99', label: (r) => `backlog: lateness p99 @ ${n(r, 'rate')}/s`, unit: 'ms' },
  { scenario: 'backlog', metric: 'precision undelivered', label: (r) => `backlog: undelivered @ ${n(r, 'rate')}/s` },
  { scenario: 'backlog', metric: 'node peak RSS', label: () => 'backlog: node peak RSS', unit: 'MiB' },
];

function format(value: number, unit = ''): string {
  if (!Number.isFinite(value)) return '—';
  const digits = Math.abs(value) >= 100 || Number.isInteger(value) ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) + (unit ? ` ${unit}` : '');
}

function limitValue(results: ScenarioResult[], limit: Limit, db: string): number {
  const machine = results.find((r) => r.scenario === 'limits');
  const name = limit === 'http' ? 'loopback HTTP POSTs/s' : db === 'sqlite' ? 'SQLite raw inserts/s' : db === 'postgres' ? 'PostgreSQL raw inserts/s' : '';
  return machine?.metrics.find((m) => m.name === name)?.value ?? NaN;
}

/** The summary as Markdown table lines (also readable in a terminal). */
export function summaryLines(results: ScenarioResult[]): string[] {
  const find = (scenario: string, system: string) => results.find((r) => r.scenario === scenario && r.system === system);
  const lines = [`| figure | ${COLUMNS.map((c) => c.label).join(' | ')} |`, `| --- |${COLUMNS.map(() => ' ---: |').join('')}`];
  for (const row of rows(results)) {
    const cells = COLUMNS.map((c) => {
      const result = find(row.scenario, c.key);
      const value = result?.metrics.find((m) => m.name === row.metric)?.value;
      if (value === undefined) return '';
      const text = format(value / (row.scale ?? 1), row.unit) + (result?.details.disturbance ? ' †' : '');
      const limit = row.limit ? limitValue(results, row.limit, c.db) : NaN;
      return Number.isFinite(limit) && Number.isFinite(value) ? `${text} (${Math.round((100 * value) / limit)}%)` : text;
    });
    if (cells.every((c) => c === '')) continue;
    const first = COLUMNS.map((c) => find(row.scenario, c.key)).find((r) => r !== undefined);
    lines.push(`| ${row.label(first)} | ${cells.join(' | ')} |`);
  }
  const disturbed = results.filter((r) => r.details.disturbance);
  if (disturbed.length > 0) lines.push('', ...disturbed.map((r) => `† ${r.label}: ${r.details.disturbance}`));
  const others = results.map((r) => r.metrics.find((m) => m.name === 'CPU of other processes')?.value ?? NaN).filter(Number.isFinite);
  if (others.length > 0) lines.push('', `CPU of processes outside the bench (other test suites) per step: ${format(Math.min(...others))}–${format(Math.max(...others))} % of a core.`);
  const machine = results.find((r) => r.scenario === 'limits');
  if (machine) {
    lines.push('', '| limit of this machine, same run | per second |', '| --- | ---: |');
    for (const m of machine.metrics.filter((m) => m.name.endsWith('/s'))) lines.push(`| ${m.name.replace(/\/s$/, '')} | ${format(m.value)} |`);
  }
  return lines;
}

export function printSummary(results: ScenarioResult[]): void {
  for (const line of summaryLines(results)) console.log(line);
}
