/** What a scenario returns, the table printed from it, and the JSON file written for it. */
import type { BenchChannel } from './bench-channel.ts';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { ChartSeries } from './stats.ts';

export interface Metric {
  name: string;
  value: number;
  unit: string;
  /** The target this figure is held against, as text ("≥ 100,000"). */
  target?: string;
}

export interface ScenarioResult {
  /** e.g. "precision @ 5000/s · Belfry · SQLite". */
  label: string;
  /** The scenario as the summary table keys it: "ingest", "fire", "precision@5000", "burst", "backlog", "limits". */
  scenario: string;
  /** The system measured (a SystemKey), or "machine" for the limits. */
  system: string;
  options: Record<string, unknown>;
  metrics: Metric[];
  /** Everything else worth keeping in the JSON: full distributions, counts, errors. */
  details: Record<string, unknown>;
  /** Lateness CDF and deliveries over time, for the SVG charts. */
  chart?: ChartSeries;
}

export interface ScenarioOptions {
  n?: number;
  rate?: number;
  durationMs?: number;
  concurrency?: number;
  /** `--channel`: where `fire` delivers (default http: the loopback receiver). */
  channel?: BenchChannel;
  /** Not a flag: how long `fire` waits after the due instant (backlog shortens it). */
  waitMsMax?: number;
  /** Not a flag: the prefix of event ids (`precision` twice on one node needs two). */
  idPrefix?: string;
}

/** A metric's value by name, NaN when the result lacks it. */
export function metricValue(result: ScenarioResult | undefined, name: string): number {
  return result?.metrics.find((m) => m.name === name)?.value ?? NaN;
}

const RESULTS_DIR = fileURLToPath(new URL('../results/', import.meta.url));

function formatValue(value: number): string {
  if (!Number.isFinite(value)) return '—';
  const digits = Number.isInteger(value) || Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/** One row per metric: scenario | metric | value | target. */
export function printTable(results: ScenarioResult[]): void {
  const rows = [['scenario', 'metric', 'value', 'target']];
  for (const r of results) {
    r.metrics.forEach((m, i) =>
      rows.push([i === 0 ? r.label : '', m.name, `${formatValue(m.value)} ${m.unit}`, m.target ?? '']),
    );
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  const line = (row: string[]) =>
    row
      .map((cell, c) => (c === 2 ? cell.padStart(widths[c]) : cell.padEnd(widths[c])))
      .join('  ')
      .trimEnd();
  console.log(line(rows[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows.slice(1)) console.log(line(row));
}

/** The commit measured, and whether src/ or bin/ differ from it (a dirty tree is not that commit). */
function gitState(): { commit: string | null; dirty: boolean | null } {
  const git = (...args: string[]) =>
    execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    return {
      commit: git('rev-parse', '--short', 'HEAD'),
      dirty: git('status', '--porcelain', '--', 'src', 'bin', 'package.json') !== '',
    };
  } catch {
    return { commit: null, dirty: null };
  }
}

/** bench/results/<name>-<timestamp>: the stem of every file a run writes. */
export function resultsStem(name: string, startedAt: Date): string {
  return `${RESULTS_DIR}${name}-${startedAt.toISOString().replace(/[:.]/g, '-')}`;
}

/** Writes <stem>.json and returns its path. */
export function writeResults(
  name: string,
  startedAt: Date,
  results: ScenarioResult[],
  extra: Record<string, unknown> = {},
): string {
  const file = `${resultsStem(name, startedAt)}.json`;
  // loadavg at the end: other work on the machine while the bench ran makes the figures noisy.
  const machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memBytes: totalmem(),
    platform: platform(),
    release: release(),
    node: process.version,
    loadavg: loadavg(),
  };
  writeFileSync(
    file,
    JSON.stringify({ name, startedAt: startedAt.toISOString(), ...gitState(), machine, ...extra, results }, null, 2) +
      '\n',
  );
  return file;
}
