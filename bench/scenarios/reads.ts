/**
 * reads (Belfry only): "no request path or scrape slows as tables grow". N events (default
 * 10,000,000) fill the store as in `backlog` (pending, due a month ahead, loaded in SQL while the
 * node is stopped); then, on a node started on that store:
 *
 *   1. the first single create after the start and one read (the pending quota's first look at
 *      the tenant);
 *   2. DEAD_N events due now to a destination nothing listens on (one attempt each): the dead
 *      letters a dashboard looks for, archived within seconds;
 *   3. SAMPLES of each read, one at a time: GET /metrics, lists filtered by state=archived,
 *      destination=<the dead one>, state=scheduled, a trace; then CREATES single creates;
 *   4. the lateness of a steady due stream (RATE/s for D), first alone, then while GET /metrics
 *      is scraped every SCRAPE_EVERY_MS.
 *
 * Reports p50/p99/max of each read (target: under 50 ms at 10,000,000 events) and the two
 * lateness distributions side by side (target: the same).
 */
import { Pool } from 'undici';
import { BACKLOG_DESTINATION } from '../lib/backlog-fill.ts';
import type { BenchClient } from '../lib/http.ts';
import { startBenchNode, type BelfryStore, type BenchNode } from '../lib/node.ts';
import type { Metric, ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import { distribution, sleep, type Distribution } from '../lib/stats.ts';
import { NOWHERE_URL } from '../systems/belfry.ts';
import { runOn, type MeasureFilled } from './backlog.ts';
import { precision } from './precision.ts';

const SAMPLES = 50;
const CREATES = 200;
const DEAD_N = 100;
const DEAD_DESTINATION = 'dead';
/** Bound on the wait for the dead letters to be archived. */
const DEAD_WAIT_MS_MAX = 60_000;
const RATE_DEFAULT = 1_000;
const DURATION_MS_DEFAULT = 20_000;
const SCRAPE_EVERY_MS = 200;
const LIST_LIMIT = 100;
const DAY_MS = 86_400_000;
/** Creates are due after the backlog (a month ahead, spread over N ms): they never fire here. */
const CREATE_AHEAD_MS = 60 * DAY_MS;
const TARGET_MS = '< 50';
/** The backlog is due from a month after its fill: a window from 29 days ahead for 2 days holds all of it. */
const FORECAST_BACKLOG_FROM = '29d';
/** Counting every stored event is slow by nature at 10,000,000: a few samples. */
const FORECAST_BACKLOG_SAMPLES = 3;

/** One GET that may answer text (/metrics): status and duration, the body as text. */
async function timedGet(
  pool: Pool,
  path: string,
  key: string | null,
): Promise<{ status: number; ms: number; text: string }> {
  const startMs = performance.now();
  const res = await pool.request({ method: 'GET', path, headers: key ? { authorization: `Bearer ${key}` } : {} });
  const text = await res.body.text();
  return { status: res.statusCode, ms: performance.now() - startMs, text };
}

/** `count` sequential calls of `call`; each must answer 200. Returns the durations and the last body. */
async function sample(
  count: number,
  call: () => Promise<{ status: number; ms: number; text: string }>,
): Promise<{ ms: number[]; last: string }> {
  const ms: number[] = [];
  let last = '';
  for (let i = 0; i < count; i++) {
    const res = await call();
    if (res.status !== 200) throw new Error(`reads: HTTP ${res.status} ${res.text.slice(0, 300)}`);
    ms.push(res.ms);
    last = res.text;
  }
  return { ms, last };
}

async function createOne(client: BenchClient, id: string): Promise<number> {
  const fireAt = Date.now() + CREATE_AHEAD_MS;
  const startMs = performance.now();
  const res = await client.call('POST', '/v1/events', {
    id,
    fireAt,
    destination: BACKLOG_DESTINATION,
    payload: { fireAt },
  });
  if (res.status !== 201) throw new Error(`reads: create HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return performance.now() - startMs;
}

/** Schedules the dead letters (due now, one attempt to a closed port) and waits until each is archived. */
async function seedDeadLetters(client: BenchClient): Promise<number> {
  const put = await client.call('PUT', `/v1/destinations/${DEAD_DESTINATION}`, {
    url: NOWHERE_URL,
    timeout: '1s',
    retry: { maxAttempts: 1, minBackoff: '1s', maxBackoff: '1s', coefficient: 1 },
  });
  if (put.status !== 200 && put.status !== 201) throw new Error(`reads: PUT destination HTTP ${put.status}`);
  const events = Array.from({ length: DEAD_N }, (_, i) => ({
    id: `dead-${i}`,
    delay: 0,
    destination: DEAD_DESTINATION,
    payload: { i },
  }));
  const batch = await client.call('POST', '/v1/events/batch', { events });
  if (batch.status !== 200) throw new Error(`reads: batch HTTP ${batch.status}`);
  const startMs = performance.now();
  for (let i = 0; i < DEAD_N; ) {
    const res = await client.call('GET', `/v1/events/dead-${i}`);
    if (res.body?.state === 'archived') i++;
    else if (performance.now() - startMs > DEAD_WAIT_MS_MAX)
      throw new Error(`reads: dead-${i} not archived within ${DEAD_WAIT_MS_MAX} ms (state ${res.body?.state})`);
    else await sleep(100);
  }
  return performance.now() - startMs;
}

/** Scrapes /metrics every SCRAPE_EVERY_MS until stopped; returns the scrape durations. */
function startScraper(pool: Pool): { stop(): Promise<number[]> } {
  const ms: number[] = [];
  let running = true;
  const loop: Promise<void> = (async () => {
    while (running) {
      const nextAt = performance.now() + SCRAPE_EVERY_MS;
      const res = await timedGet(pool, '/metrics', null);
      if (res.status === 200) ms.push(res.ms);
      await sleep(Math.max(0, nextAt - performance.now()));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return ms;
    },
  };
}

/**
 * How long the node's latest background count took, and how many counts it has made, from
 * /metrics. Read at the end: at 10,000,000 events the first count may still run while the reads
 * are measured. NaN when no count has ended (the gauge reads 0 then).
 */
async function latestCount(node: BenchNode): Promise<{ durationMs: number; samples: number }> {
  const pool = new Pool(node.url, { connections: 1, pipelining: 1 });
  try {
    const res = await timedGet(pool, '/metrics', null);
    const seconds = gauge(res.text, 'belfry_events_sample_duration_seconds');
    return { durationMs: seconds > 0 ? seconds * 1000 : NaN, samples: gauge(res.text, 'belfry_events_samples_total') };
  } finally {
    await pool.close();
  }
}

/** A gauge's value in Prometheus text; NaN when absent. */
function gauge(text: string, name: string): number {
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
}

function latencyMetrics(what: string, d: Distribution, target: string | null = TARGET_MS): Metric[] {
  return [
    { name: `${what} p50`, value: d.p50, unit: 'ms' },
    { name: `${what} p99`, value: d.p99, unit: 'ms', target: target ?? undefined },
    { name: `${what} max`, value: d.max, unit: 'ms' },
  ];
}

function metricOf(result: ScenarioResult, name: string): number {
  return result.metrics.find((m) => m.name === name)?.value ?? NaN;
}

/** The read latencies of phase 3, by name. */
async function measureReads(
  node: BenchNode,
  client: BenchClient,
): Promise<{ reads: Record<string, Distribution>; pages: Record<string, unknown> }> {
  const pool = new Pool(node.url, { connections: 1, pipelining: 1 });
  try {
    const list = (query: string) => () => timedGet(pool, `/v1/events?${query}&limit=${LIST_LIMIT}`, node.key);
    const runs: [string, () => Promise<{ status: number; ms: number; text: string }>][] = [
      ['/metrics', () => timedGet(pool, '/metrics', null)],
      ['list state=archived', list('state=archived')],
      [`list destination=${DEAD_DESTINATION}`, list(`destination=${DEAD_DESTINATION}`)],
      ['list state=scheduled', list('state=scheduled')],
      ['trace', () => timedGet(pool, `/v1/events/dead-0/transitions`, node.key)],
      // The due-load forecast (issue 15): the next day, which holds none of the backlog (the
      // common call: its cost must not follow the table), then a window holding the whole
      // backlog (due a month ahead: every stored event counted from the index).
      [
        'forecast next 24h by destination',
        () => timedGet(pool, '/v1/forecast?from=now&to=24h&bucket=1m&by=destination', node.key),
      ],
      [
        'forecast whole backlog (2 days, 1h buckets)',
        () => timedGet(pool, `/v1/forecast?from=${FORECAST_BACKLOG_FROM}&to=2d&bucket=1h`, node.key),
      ],
    ];
    const reads: Record<string, Distribution> = {};
    const pages: Record<string, unknown> = {};
    for (const [name, call] of runs) {
      const { ms, last } = await sample(name.startsWith('forecast whole') ? FORECAST_BACKLOG_SAMPLES : SAMPLES, call);
      reads[name] = distribution(ms);
      if (name.startsWith('list')) {
        const page = JSON.parse(last) as { events: unknown[]; nextCursor: string | null };
        pages[name] = { events: page.events.length, nextCursor: page.nextCursor !== null };
      }
    }
    const creates: number[] = [];
    for (let i = 0; i < CREATES; i++) creates.push(await createOne(client, `c-${i}`));
    reads['single create'] = distribution(creates);
    return { reads, pages };
  } finally {
    await pool.close();
  }
}

/** Phase 4: the same due stream alone, then under scrapes. */
async function measureLateness(node: BenchNode, opts: ScenarioOptions, batchRate: number | null) {
  const rate = opts.rate ?? RATE_DEFAULT;
  const durationMs = opts.durationMs ?? DURATION_MS_DEFAULT;
  const quiet = await runOn(node, precision, 'rx-quiet', { rate, durationMs, idPrefix: 'q' }, batchRate);
  const pool = new Pool(node.url, { connections: 1, pipelining: 1 });
  try {
    const scraper = startScraper(pool);
    const scraped = await runOn(node, precision, 'rx-scraped', { rate, durationMs, idPrefix: 's' }, batchRate).finally(
      () => scraper.stop(),
    );
    return { rate, durationMs, quiet, scraped, scrapes: distribution(await scraper.stop()) };
  } finally {
    await pool.close();
  }
}

/** The measure of a filled store for BacklogRun: starts a node on it and measures it (see the header). */
export function readsMeasure(opts: ScenarioOptions): MeasureFilled {
  return (store, n, loadMs, loadedSideBySide, batchRate) =>
    measureFilled(store, n, loadMs, loadedSideBySide, batchRate, opts);
}

async function measureFilled(
  store: BelfryStore,
  n: number,
  loadMs: number,
  loadedSideBySide: boolean,
  batchRate: number | null,
  opts: ScenarioOptions,
): Promise<ScenarioResult> {
  const startedMs = performance.now();
  const node = await startBenchNode(store);
  const startMs = performance.now() - startedMs;
  try {
    const client = node.client(1);
    let firstCreateMs: number;
    let deadMs: number;
    let measured: Awaited<ReturnType<typeof measureReads>>;
    try {
      // One read first, so the first create measures the pending quota's first look at the tenant
      // rather than the process's first request (connections, compiled code, the key's lookup).
      const warm = await client.call('GET', '/v1/limits');
      if (warm.status !== 200) throw new Error(`reads: GET /v1/limits HTTP ${warm.status}`);
      firstCreateMs = await createOne(client, 'c-first');
      deadMs = await seedDeadLetters(client);
      measured = await measureReads(node, client);
    } finally {
      await client.close();
    }
    const late = await measureLateness(node, opts, batchRate);
    const lastCount = await latestCount(node);
    const lateness = (r: ScenarioResult, what: string): Metric[] =>
      ['p50', 'p99', 'max'].map((q) => ({
        name: `lateness ${q}, ${what}`,
        value: metricOf(r, `lateness ${q}`),
        unit: 'ms',
      }));
    const kind = store.kind === 'sqlite' ? 'Belfry · SQLite' : 'Belfry · PostgreSQL';
    return {
      label: `reads on ${n.toLocaleString('en-US')} events · ${kind}`,
      scenario: 'reads',
      system: store.kind === 'sqlite' ? 'belfry-sqlite' : 'belfry-postgres',
      options: {
        events: n,
        samples: SAMPLES,
        creates: CREATES,
        deadLetters: DEAD_N,
        listLimit: LIST_LIMIT,
        rate: late.rate,
        durationMs: late.durationMs,
        scrapeEveryMs: SCRAPE_EVERY_MS,
      },
      metrics: [
        { name: 'stored events', value: n + 1, unit: '' },
        { name: 'first create after start', value: firstCreateMs, unit: 'ms', target: TARGET_MS },
        ...Object.entries(measured.reads).flatMap(([name, d]) =>
          latencyMetrics(name, d, name.startsWith('forecast whole') ? null : TARGET_MS),
        ),
        { name: 'background count of every event, latest', value: lastCount.durationMs, unit: 'ms' },
        { name: 'background counts so far', value: lastCount.samples, unit: '' },
        ...lateness(late.quiet, 'no scrapes'),
        ...lateness(late.scraped, `/metrics every ${SCRAPE_EVERY_MS} ms`),
        ...latencyMetrics('/metrics while firing', late.scrapes),
        {
          name: 'undelivered',
          value: metricOf(late.quiet, 'undelivered') + metricOf(late.scraped, 'undelivered'),
          unit: '',
          target: '0',
        },
        { name: 'node start', value: startMs, unit: 'ms' },
        { name: 'node peak RSS', value: node.peakRssBytes() / 2 ** 20, unit: 'MiB' },
        { name: 'load (SQL, not Belfry)', value: loadMs / 1000, unit: 's' },
      ],
      details: {
        reads: measured.reads,
        pages: measured.pages,
        deadLettersArchivedMs: deadMs,
        scrapesWhileFiring: late.scrapes,
        quiet: { ...late.quiet, chart: undefined },
        scraped: { ...late.scraped, chart: undefined },
        logIssues: node.logIssues(),
        loadedSideBySide,
      },
      chart: late.scraped.chart,
    };
  } finally {
    await node.stop();
  }
}
