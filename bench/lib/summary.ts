/**
 * The side-by-side table: one row per figure, one column per system, every figure from the same
 * run. Throughput figures that a machine limit bounds also show their share of it, e.g.
 * "52,000 (61%)" of the raw insert rate of the same database. Where peers ran in the same run,
 * each Belfry value also shows its ratio to the best peer's value for that figure, e.g.
 * "52,000 (61%; 1.42× best peer)", and the best peer's cell says "best peer".
 */
import { metricValue, type ScenarioResult } from './report.ts';

const COLUMNS: { key: string; label: string; db: 'sqlite' | 'postgres' | 'redis' }[] = [
  { key: 'belfry-sqlite', label: 'Belfry · SQLite', db: 'sqlite' },
  { key: 'belfry-postgres', label: 'Belfry · PostgreSQL', db: 'postgres' },
  { key: 'bullmq', label: 'BullMQ · Redis', db: 'redis' },
  { key: 'bullmq-postgres', label: 'BullMQ · PostgreSQL', db: 'postgres' },
  { key: 'pg-boss', label: 'pg-boss · PostgreSQL', db: 'postgres' },
  { key: 'graphile-worker', label: 'graphile-worker · PostgreSQL', db: 'postgres' },
];

/** What a figure is shown as a share of (from the limits step): the store's raw inserts, loopback POSTs, or a do-nothing JSON API's single creates. */
type Limit = 'insert' | 'http' | 'api';

/** Which way a figure is better: a rate higher, a latency, duration or CPU cost lower. */
export type Better = 'higher' | 'lower';

interface Row {
  scenario: string;
  metric: string;
  label: (r: ScenarioResult | undefined) => string;
  /** Shown as value / scale (ms → s). */
  scale?: number;
  unit?: string;
  limit?: Limit;
  /** The peers' values come from this metric instead (a Belfry-only variant of a figure the peers have). */
  peerMetric?: string;
  /** Set on the figures compared with the best peer (not on counts such as undelivered). */
  better?: Better;
}

const BELFRY = (key: string) => key.startsWith('belfry-');

const n = (r: ScenarioResult | undefined, key = 'n') =>
  typeof r?.options[key] === 'number' ? (r.options[key] as number).toLocaleString('en-US') : '?';

function precisionRows(rate: number): Row[] {
  const at = `precision @ ${rate.toLocaleString('en-US')}/s`;
  return [
    {
      scenario: `precision@${rate}`,
      metric: 'lateness p50',
      label: () => `${at}: lateness p50`,
      unit: 'ms',
      better: 'lower',
    },
    {
      scenario: `precision@${rate}`,
      metric: 'lateness p99',
      label: () => `${at}: lateness p99`,
      unit: 'ms',
      better: 'lower',
    },
    {
      scenario: `precision@${rate}`,
      metric: 'lateness max',
      label: () => `${at}: lateness max`,
      unit: 'ms',
      better: 'lower',
    },
    { scenario: `precision@${rate}`, metric: 'undelivered', label: () => `${at}: undelivered` },
    {
      scenario: `precision@${rate}`,
      metric: 'CPU µs per event',
      label: () => `${at}: CPU µs per event, node/worker + database`,
      unit: 'µs',
      better: 'lower',
    },
    {
      scenario: `precision@${rate}`,
      metric: 'bench client CPU µs per event',
      label: () => `${at}: CPU µs per event, bench client`,
      unit: 'µs',
      better: 'lower',
    },
  ];
}

/** The rows of a paced stream (`paced@R` to webhooks, `paced-pull@R` to pull consumers) at `rate`. */
function pacedRows(scenario: 'paced' | 'paced-pull', rate: number): Row[] {
  const at = `paced${scenario === 'paced-pull' ? ' pull' : ''} @ ${rate.toLocaleString('en-US')}/s`;
  const key = `${scenario}@${rate}`;
  return [
    { scenario: key, metric: 'kept up', label: () => `${at}: kept up (1 = yes)` },
    {
      scenario: key,
      metric: 'delivered events/s',
      label: () => `${at}: delivered events/s`,
      unit: '/s',
      better: 'higher',
    },
    { scenario: key, metric: 'lateness p50', label: () => `${at}: lateness p50`, unit: 'ms', better: 'lower' },
    { scenario: key, metric: 'lateness p99', label: () => `${at}: lateness p99`, unit: 'ms', better: 'lower' },
    {
      scenario: key,
      metric: 'CPU µs per event',
      label: () => `${at}: CPU µs per event, node/worker + database`,
      unit: 'µs',
      better: 'lower',
    },
  ];
}

/** The rates of the results' `<prefix>@R` scenarios, ascending. */
function ratesOf(results: ScenarioResult[], prefix: string): number[] {
  const re = new RegExp(`^${prefix}@(\\d+)$`);
  return [...new Set(results.map((r) => re.exec(r.scenario)?.[1]).filter((m): m is string => m !== undefined))]
    .map(Number)
    .sort((a, b) => a - b);
}

/** The rows, precision ones for each rate the results hold (to webhooks: `precision@5000→kafka` is in the per-step table only). */
function rows(results: ScenarioResult[]): Row[] {
  const rates = [
    ...new Set(
      results
        .filter((r) => /^precision@\d+$/.test(r.scenario))
        .map((r) => Number(r.scenario.slice('precision@'.length))),
    ),
  ].sort((a, b) => a - b);
  const at = ROWS.findIndex((r) => r.scenario === 'burst');
  return [
    ...ROWS.slice(0, at),
    ...rates.flatMap(precisionRows),
    ...ROWS.slice(at),
    ...ratesOf(results, 'paced').flatMap((rate) => pacedRows('paced', rate)),
    ...ratesOf(results, 'paced-pull').flatMap((rate) => pacedRows('paced-pull', rate)),
  ];
}

const ROWS: Row[] = [
  {
    scenario: 'ingest',
    metric: 'batch events/s',
    label: () => 'ingest: events/s, batches of 1,000 (4 in flight)',
    limit: 'insert',
    better: 'higher',
  },
  {
    scenario: 'ingest',
    metric: 'batch events/s, Prefer: return=minimal',
    label: () =>
      'ingest: events/s, batches of 1,000, Belfry with Prefer: return=minimal (peers: their bulk call as above)',
    limit: 'insert',
    peerMetric: 'batch events/s',
    better: 'higher',
  },
  {
    scenario: 'ingest',
    metric: 'batch, return=minimal: CPU µs per event',
    label: () => 'ingest: CPU µs per event, batches, Prefer: return=minimal, node/worker + database (peers: as above)',
    unit: 'µs',
    peerMetric: 'batch: CPU µs per event',
    better: 'lower',
  },
  {
    scenario: 'ingest',
    metric: 'single requests/s',
    label: () => 'ingest: events/s, one per request (64 clients)',
    limit: 'api',
    better: 'higher',
  },
  {
    scenario: 'ingest',
    metric: 'single latency p99',
    label: () => 'ingest: one-event request p99',
    unit: 'ms',
    better: 'lower',
  },
  {
    scenario: 'ingest',
    metric: 'batch: CPU µs per event',
    label: () => 'ingest: CPU µs per event, batches, node/worker + database',
    unit: 'µs',
    better: 'lower',
  },
  {
    scenario: 'ingest',
    metric: 'batch: bench client CPU µs per event',
    label: () => 'ingest: CPU µs per event, batches, bench client',
    unit: 'µs',
    better: 'lower',
  },
  {
    scenario: 'ingest',
    metric: 'single: CPU µs per event',
    label: () => 'ingest: CPU µs per event, one per request, node/worker + database',
    unit: 'µs',
    better: 'lower',
  },
  {
    scenario: 'ingest',
    metric: 'single: bench client CPU µs per event',
    label: () => 'ingest: CPU µs per event, one per request, bench client',
    unit: 'µs',
    better: 'lower',
  },
  {
    scenario: 'fire',
    metric: 'deliveries/s',
    label: (r) => `fire: ${n(r)} due at once, deliveries/s`,
    limit: 'http',
    better: 'higher',
  },
  {
    scenario: 'fire',
    metric: 'due → last delivery',
    label: () => 'fire: due → last delivery',
    scale: 1000,
    unit: 's',
    better: 'lower',
  },
  { scenario: 'fire', metric: 'undelivered', label: () => 'fire: undelivered' },
  { scenario: 'fire', metric: 'duplicates', label: () => 'fire: duplicates' },
  {
    scenario: 'fire',
    metric: 'CPU µs per event',
    label: () => 'fire: CPU µs per event, node/worker + database',
    unit: 'µs',
    better: 'lower',
  },
  {
    scenario: 'burst',
    metric: 'minute end → last delivery',
    label: (r) => `burst: ${n(r)} due in one minute, minute end → last delivery`,
    unit: 's',
    better: 'lower',
  },
  { scenario: 'burst', metric: 'deliveries/s', label: () => 'burst: deliveries/s', limit: 'http', better: 'higher' },
  {
    scenario: 'burst',
    metric: 'lateness p99',
    label: () => 'burst: lateness p99',
    scale: 1000,
    unit: 's',
    better: 'lower',
  },
  { scenario: 'burst', metric: 'duplicates', label: () => 'burst: duplicates' },
  {
    scenario: 'burst',
    metric: 'CPU µs per event',
    label: () => 'burst: CPU µs per event, node + database',
    unit: 'µs',
    better: 'lower',
  },
  {
    scenario: 'backlog',
    metric: 'fire deliveries/s',
    label: (r) => `backlog of ${n(r, 'backlog')}: fire deliveries/s`,
    limit: 'http',
    better: 'higher',
  },
  { scenario: 'backlog', metric: 'fire undelivered', label: () => 'backlog: fire undelivered (after 60 s)' },
  {
    scenario: 'backlog',
    metric: 'precision lateness p99',
    label: (r) => `backlog: lateness p99 @ ${n(r, 'rate')}/s`,
    unit: 'ms',
    better: 'lower',
  },
  { scenario: 'backlog', metric: 'precision undelivered', label: (r) => `backlog: undelivered @ ${n(r, 'rate')}/s` },
  { scenario: 'backlog', metric: 'node peak RSS', label: () => 'backlog: node peak RSS', unit: 'MiB' },
  { scenario: 'pull', metric: 'SDK consumer (concurrency 100) events/s', label: () => 'pull: SDK consumer events/s' },
  {
    scenario: 'pull',
    metric: 'BullMQ Worker (concurrency 100) jobs/s, Redis without persistence',
    label: () => 'pull: BullMQ Worker jobs/s beside it (Redis without persistence)',
  },
  { scenario: 'pull', metric: 'SDK consumer ÷ BullMQ Worker', label: () => 'pull: SDK consumer ÷ BullMQ Worker' },
  { scenario: 'queues', metric: 'one queue: deliveries/s', label: () => 'queues: one queue, deliveries/s' },
  {
    scenario: 'queues',
    metric: '10,000 queues: deliveries/s',
    label: () => 'queues: 10,000 queues of 1,000 tenants, deliveries/s',
  },
  { scenario: 'queues', metric: 'many ÷ one', label: () => 'queues: many ÷ one' },
  { scenario: 'queues', metric: 'heap per idle queue', label: () => 'queues: heap per idle queue', unit: 'bytes' },
];

/** One peer's value of a figure, and why its step does not count (undelivered events, failed calls), if so. */
export interface PeerValue {
  system: string;
  value: number;
  incomplete: string | null;
}

/**
 * The best peer for a figure: the highest (or lowest) finite value among the peers whose step
 * completed. `passedOver`: the incomplete peers that would otherwise have been best or level
 * with it (or that were the only ones with a value), so the table can say so.
 */
export function bestPeer(peers: PeerValue[], better: Better): { best: PeerValue | null; passedOver: PeerValue[] } {
  const finite = peers.filter((p) => Number.isFinite(p.value));
  const beats = (a: number, b: number) => (better === 'higher' ? a > b : a < b);
  let best: PeerValue | null = null;
  for (const p of finite) if (p.incomplete === null && (best === null || beats(p.value, best.value))) best = p;
  const passedOver = finite.filter((p) => p.incomplete !== null && (best === null || !beats(best.value, p.value)));
  return { best, passedOver };
}

/** A Belfry value as a ratio to the best peer's (NaN when either is missing or the best is not positive). */
export function ratioTo(value: number, best: number): number {
  return Number.isFinite(value) && Number.isFinite(best) && best > 0 ? value / best : NaN;
}

/** "1.42×", "12.3×", "140×", "0.041×". */
export function formatRatio(ratio: number): string {
  if (!Number.isFinite(ratio)) return '';
  const text =
    ratio >= 100
      ? ratio.toFixed(0)
      : ratio >= 10
        ? ratio.toFixed(1)
        : ratio >= 0.1
          ? ratio.toFixed(2)
          : ratio.toPrecision(2);
  return `${text}×`;
}

/** Why a step's figures do not stand for the system: events it left undelivered or calls that failed. */
function incompleteReason(result: ScenarioResult): string | null {
  const count = (name: string) => result.metrics.find((m) => m.name === name)?.value ?? 0;
  const reasons: string[] = [];
  const undelivered = count('undelivered');
  if (undelivered > 0) reasons.push(`${undelivered.toLocaleString('en-US')} undelivered`);
  const failed = count('failed');
  if (failed > 0) reasons.push(`${failed.toLocaleString('en-US')} calls failed`);
  return reasons.length > 0 ? reasons.join(', ') : null;
}

/** One figure of the summary, as the JSON keeps it: values as shown (after scale), in `unit`. */
export interface SummaryFigure {
  figure: string;
  scenario: string;
  metric: string;
  unit: string | null;
  better: Better | null;
  /** By system key; only the systems measured in this run. */
  values: Record<string, number>;
  /** The best peer among those that ran this step and completed it; null when none did. */
  bestPeer: { system: string; value: number } | null;
  /** Each Belfry column's value / the best peer's value. */
  ratioToBestPeer: Record<string, number>;
  /** Peers not counted as best although their value was as good or better, and why. */
  notCountedAsBest: { system: string; value: number; reason: string }[];
}

/** The summary's figures with the best peer and Belfry's ratios to it (the JSON's `summary`). */
export function summaryFigures(results: ScenarioResult[]): SummaryFigure[] {
  const find = (scenario: string, system: string) =>
    results.find((r) => r.scenario === scenario && r.system === system);
  const figures: SummaryFigure[] = [];
  for (const row of rows(results)) {
    const values: Record<string, number> = {};
    const peers: PeerValue[] = [];
    for (const c of COLUMNS) {
      const result = find(row.scenario, c.key);
      const metric = !BELFRY(c.key) && row.peerMetric ? row.peerMetric : row.metric;
      const value = result?.metrics.find((m) => m.name === metric)?.value;
      if (result === undefined || value === undefined) continue;
      values[c.key] = value / (row.scale ?? 1);
      if (!BELFRY(c.key)) peers.push({ system: c.key, value: values[c.key], incomplete: incompleteReason(result) });
    }
    if (Object.keys(values).length === 0 || (row.peerMetric && !Object.keys(values).some(BELFRY))) continue;
    const { best, passedOver } = row.better ? bestPeer(peers, row.better) : { best: null, passedOver: [] };
    const ratioToBestPeer: Record<string, number> = {};
    for (const [key, value] of Object.entries(values)) {
      const ratio = best ? ratioTo(value, best.value) : NaN;
      if (BELFRY(key) && Number.isFinite(ratio)) ratioToBestPeer[key] = ratio;
    }
    const first = COLUMNS.map((c) => find(row.scenario, c.key)).find((r) => r !== undefined);
    figures.push({
      figure: row.label(first),
      scenario: row.scenario,
      metric: row.metric,
      unit: row.unit ?? (first?.metrics.find((m) => m.name === row.metric)?.unit || null),
      better: row.better ?? null,
      values,
      bestPeer: best ? { system: best.system, value: best.value } : null,
      ratioToBestPeer,
      notCountedAsBest: passedOver.map((p) => ({ system: p.system, value: p.value, reason: p.incomplete! })),
    });
  }
  return figures;
}

function format(value: number, unit = ''): string {
  if (!Number.isFinite(value)) return '—';
  const digits = Math.abs(value) >= 100 || Number.isInteger(value) ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return (
    value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) +
    (unit ? ` ${unit}` : '')
  );
}

function limitValue(results: ScenarioResult[], limit: Limit, db: string): number {
  const machine = results.find((r) => r.scenario === 'limits');
  const name =
    limit === 'http'
      ? 'loopback HTTP POSTs/s'
      : limit === 'api'
        ? 'do-nothing JSON API, single creates/s'
        : db === 'sqlite'
          ? 'SQLite raw inserts/s'
          : db === 'postgres'
            ? 'PostgreSQL raw inserts/s'
            : '';
  return machine?.metrics.find((m) => m.name === name)?.value ?? NaN;
}

/** The summary as Markdown table lines (also readable in a terminal); `failures`: steps that threw. */
export function summaryLines(results: ScenarioResult[], failures: { step: string; error: string }[] = []): string[] {
  const find = (scenario: string, system: string) =>
    results.find((r) => r.scenario === scenario && r.system === system);
  const lines = [
    `| figure | ${COLUMNS.map((c) => c.label).join(' | ')} |`,
    `| --- |${COLUMNS.map(() => ' ---: |').join('')}`,
  ];
  const passedOver = new Map<string, string>();
  let ratios = false;
  const rowsByKey = new Map(rows(results).map((r) => [`${r.scenario}\u0000${r.metric}`, r]));
  for (const figure of summaryFigures(results)) {
    const row = rowsByKey.get(`${figure.scenario}\u0000${figure.metric}`)!;
    const cells = COLUMNS.map((c) => {
      const value = figure.values[c.key];
      if (value === undefined) return '';
      const result = find(figure.scenario, c.key);
      const skipped = figure.notCountedAsBest.find((p) => p.system === c.key);
      if (skipped) passedOver.set(`${result!.label}`, skipped.reason);
      const text = format(value, row.unit) + (result?.details.disturbance ? ' †' : '') + (skipped ? ' ‡' : '');
      const notes: string[] = [];
      const limit = row.limit ? limitValue(results, row.limit, c.db) : NaN;
      if (Number.isFinite(limit) && Number.isFinite(value))
        notes.push(`${Math.round((100 * value * (row.scale ?? 1)) / limit)}%`);
      const ratio = figure.ratioToBestPeer[c.key];
      if (ratio !== undefined) {
        notes.push(`${formatRatio(ratio)} best peer`);
        ratios = true;
      }
      if (figure.bestPeer?.system === c.key && Object.keys(figure.values).some(BELFRY)) notes.push('best peer');
      return notes.length > 0 ? `${text} (${notes.join('; ')})` : text;
    });
    lines.push(`| ${figure.figure} | ${cells.join(' | ')} |`);
  }
  if (ratios) {
    lines.push(
      '',
      '"N× best peer": Belfry\'s value / the best value among the peers measured in this run (highest rate; lowest latency, duration or CPU), so above 1 is better for a rate and below 1 for the others.',
    );
  }
  if (results.some((r) => r.metrics.some((m) => m.name.endsWith('CPU µs per event')))) {
    lines.push(
      '',
      'CPU µs per event: CPU seconds of the node (or peer worker) plus its own database server (PostgreSQL or Redis; none for SQLite, which runs in the node) over the step / events × 1e6. In ingest a peer has no worker running: its client is the bench process, counted in the "bench client" rows.',
    );
  }
  if (passedOver.size > 0)
    lines.push('', ...[...passedOver].map(([label, reason]) => `‡ ${label}: ${reason}; not counted as best peer.`));
  if (failures.length > 0)
    lines.push(
      '',
      ...failures.map((f) => `Not measured (the step failed): ${f.step}: ${f.error.split('\n')[0].slice(0, 200)}`),
    );
  const disturbed = results.filter((r) => r.details.disturbance);
  if (disturbed.length > 0) lines.push('', ...disturbed.map((r) => `† ${r.label}: ${r.details.disturbance}`));
  const others = results
    .map((r) => r.metrics.find((m) => m.name === 'CPU of other processes')?.value ?? NaN)
    .filter(Number.isFinite);
  if (others.length > 0)
    lines.push(
      '',
      `CPU of processes outside the bench (other test suites) per step: ${format(Math.min(...others))}–${format(Math.max(...others))} % of a core.`,
    );
  const machine = results.find((r) => r.scenario === 'limits');
  if (machine) {
    lines.push('', '| limit of this machine, same run | per second |', '| --- | ---: |');
    for (const m of machine.metrics.filter((m) => m.name.endsWith('/s')))
      lines.push(`| ${m.name.replace(/\/s$/, '')} | ${format(m.value)} |`);
  }
  return lines;
}

/**
 * The `citus` scenario's table (none without its results): a row per server (plain PostgreSQL,
 * Citus with 1 and with 2 workers), its fire and ingest rates with their ratio to plain
 * PostgreSQL's, and the CPU µs per event of the node and of each PostgreSQL instance.
 */
export function citusLines(results: ScenarioResult[]): string[] {
  const rows = results.filter((r) => r.scenario === 'citus');
  if (rows.length === 0) return [];
  const workers = Math.max(...rows.map((r) => Number(r.options.workers) || 0));
  const instances = ['node', 'coordinator', ...Array.from({ length: workers }, (_, i) => `worker ${i + 1}`), 'total'];
  const cpuHeads = (what: string) =>
    instances.map((i, k) =>
      k === 0 ? `${what} CPU µs/event: node` : i === 'coordinator' ? 'coordinator (PG: server)' : i,
    );
  const cpuCells = (r: ScenarioResult, what: string) =>
    instances.map((i) => {
      const value = metricValue(r, `${what} CPU µs per event: ${i}`);
      // Plain PostgreSQL's one instance stands in the coordinator's column.
      return format(
        i === 'coordinator' && Number.isNaN(value) ? metricValue(r, `${what} CPU µs per event: PostgreSQL`) : value,
      );
    });
  const heads = [
    'server',
    'fire events/s',
    '÷ PG',
    'ingest events/s',
    '÷ PG',
    ...cpuHeads('fire'),
    ...cpuHeads('ingest'),
  ];
  const lines = [
    `| ${heads.join(' | ')} |`,
    `| --- |${heads
      .slice(1)
      .map(() => ' ---: |')
      .join('')}`,
  ];
  for (const r of rows) {
    const cells = [
      r.label.split(' · ').slice(2).join(' · '),
      format(metricValue(r, 'fire events/s')),
      formatRatio(metricValue(r, 'fire ÷ PostgreSQL')),
      format(metricValue(r, 'ingest events/s')),
      formatRatio(metricValue(r, 'ingest ÷ PostgreSQL')),
      ...cpuCells(r, 'fire'),
      ...cpuCells(r, 'ingest'),
    ];
    lines.push(`| ${cells.map((c) => c.replace(/^—$/, '')).join(' | ')} |`);
  }
  const n = rows[0].options.n as number;
  lines.push(
    '',
    `fire: ${n.toLocaleString('en-US')} events due at one instant, delivered to the loopback receiver; events/s from the first delivery to the last. ingest: ${n.toLocaleString('en-US')} events in batches of 1,000 (4 in flight), the batch phase's events/s (its single-event and Prefer: return=minimal phases are in the JSON). Each on a fresh store. "÷ PG": the rate / plain PostgreSQL's in this run.`,
    '',
    'CPU µs/event: CPU seconds over the window fire and ingest measure their CPU in (fire: from 200 ms before the due instant to the last delivery; ingest: the batch phase) / events × 1e6, of the node, and of each PostgreSQL instance apart (its postmaster and all its backends, reaped ones included): the Citus coordinator (on plain PostgreSQL, the server) and each worker; total: all of them.',
    '',
    `This machine has ${rows[0].options.cores ?? '?'} cores, shared by the node, the bench's client and receiver, and every PostgreSQL instance: a cluster's coordinator and workers compete with each other and with the node for them, so the rates are not what Citus makes of machines of their own. Compare the CPU per event, which moves far less with that contention.`,
  );
  for (const r of rows) {
    const lost = metricValue(r, 'fire undelivered');
    const failed = metricValue(r, 'ingest failed');
    if (lost > 0 || failed > 0)
      lines.push(
        '',
        `${r.label}: ${lost.toLocaleString('en-US')} undelivered, ${failed.toLocaleString('en-US')} ingest calls failed.`,
      );
  }
  return lines;
}

export function printSummary(results: ScenarioResult[], failures: { step: string; error: string }[] = []): void {
  // Nothing to put side by side (a run of broker precision steps alone): the per-step table says it all.
  const lines = summaryFigures(results).length === 0 && failures.length === 0 ? [] : summaryLines(results, failures);
  const citus = citusLines(results);
  if (lines.length > 0 && citus.length > 0) lines.push('');
  for (const line of [...lines, ...citus]) console.log(line);
}
