/**
 * The benchmark command (see bench/README.md):
 *
 *   npm run bench -- <ingest|sdk|fire|precision|burst|backlog|reads|limits|pull|schedules|paced|queues|citus|all> [--store sqlite|postgres]
 *                    [--systems belfry,bullmq,bullmq-postgres,pg-boss,graphile-worker] [--n N] [--rate R] [--duration 60s]
 *                    [--channel http|kafka|nats|amqp|redis]  (fire, precision: Belfry to a broker, with a live consumer)
 *   npm run bench -- report bench/results/<file>.json      (the summary and charts of a finished run)
 *
 * Every step runs against fresh processes and a fresh store, after the previous step's writes
 * were flushed; the steps run one after another, so no two systems compete for the machine.
 * Prints the per-step table and the side-by-side summary, and writes
 * bench/results/<name>-<timestamp>.json and one SVG chart per firing scenario.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseDurationMs } from '../src/core/duration.ts';
import { renderCharts } from './lib/charts.ts';
import { cpuMark, otherCpuMetric } from './lib/machine.ts';
import { BROKER_CHANNELS, type BenchChannel } from './lib/bench-channel.ts';
import { printTable, resultsStem, writeResults, type ScenarioOptions, type ScenarioResult } from './lib/report.ts';
import { pgStartedAt, settle } from './lib/pg.ts';
import { printSummary, summaryFigures } from './lib/summary.ts';
import { planSteps, type Step } from './plan.ts';
import { runOnSystem } from './scenarios/scenario.ts';
import { startSystem } from './systems/index.ts';

const USAGE = `usage: npm run bench -- report <results.json> | <ingest|sdk|fire|precision|burst|backlog|reads|limits|pull|schedules|paced|queues|citus|all> [--store sqlite|postgres] [--systems belfry,bullmq,bullmq-postgres,pg-boss,graphile-worker] [--n N] [--rate R] [--duration 60s] [--channel http|kafka|nats|amqp|redis (fire, precision)]`;

function positiveInt(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text.replaceAll('_', '').replaceAll(',', ''));
  if (!Number.isInteger(value) || value <= 0) throw new Error(`--${name} must be a positive integer, got "${text}"`);
  return value;
}

function parseCommand(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      n: { type: 'string' },
      rate: { type: 'string' },
      duration: { type: 'string' },
      concurrency: { type: 'string' },
      store: { type: 'string' },
      systems: { type: 'string' },
      channel: { type: 'string' },
    },
  });
  if (positionals.length !== 1) throw new Error(USAGE);
  let durationMs: number | undefined;
  if (values.duration !== undefined) {
    const ms = parseDurationMs(/^\d+$/.test(values.duration) ? Number(values.duration) : values.duration);
    if (ms === null || ms < 1_000)
      throw new Error(`--duration must be a duration of at least 1s ("30s", "2m"), got "${values.duration}"`);
    durationMs = ms;
  }
  if (values.store !== undefined && values.store !== 'sqlite' && values.store !== 'postgres')
    throw new Error(`--store must be sqlite or postgres, got "${values.store}"`);
  const channel = values.channel as BenchChannel | undefined;
  if (channel !== undefined) {
    if (channel !== 'http' && !(BROKER_CHANNELS as readonly string[]).includes(channel))
      throw new Error(`--channel must be http, ${BROKER_CHANNELS.join(', ')}; got "${channel}"`);
    if (positionals[0] !== 'fire' && positionals[0] !== 'precision')
      throw new Error('--channel applies to "fire" and "precision" only');
    if (channel !== 'http' && values.systems !== undefined && values.systems !== 'belfry')
      throw new Error('--channel with a broker runs Belfry alone: the peers deliver to webhooks only');
  }
  const opts: ScenarioOptions = {
    n: positiveInt('n', values.n),
    rate: positiveInt('rate', values.rate),
    concurrency: positiveInt('concurrency', values.concurrency),
    durationMs,
    channel,
  };
  if (channel !== undefined && channel !== 'http') values.systems = 'belfry';
  const steps = planSteps(positionals[0], {
    store: values.store as 'sqlite' | 'postgres' | undefined,
    systems: values.systems?.split(',').map((s) => s.trim()),
    opts,
  });
  return { name: positionals[0], steps };
}

/** The batch scheduling rate each system reached in this run's ingest step: sizes later leads. */
const batchRates = new Map<string, number>();

async function runStep(step: Step): Promise<ScenarioResult[]> {
  // Every system starts from the same quiet disk, whatever ran before it.
  await settle();
  const pgStart = await pgStartedAt();
  const cpuStart = cpuMark();
  console.error(`[bench] ${step.title}: starting`);
  let results: ScenarioResult[];
  if (step.kind === 'custom') {
    results = await step.run(batchRates);
  } else {
    const key = step.system;
    results = [
      await runOnSystem(
        step.scenario,
        (opts) => startSystem(key, opts),
        step.opts,
        batchRates.get(key) ?? null,
        step.maxConcurrency,
      ),
    ];
  }
  const other = otherCpuMetric(cpuStart, cpuMark());
  // Other test suites on this machine restart PostgreSQL now and then: such a step is marked.
  const pgEnd = await pgStartedAt();
  const disturbance =
    pgStart !== pgEnd ? `PostgreSQL restarted during this step (started ${pgStart} → ${pgEnd})` : null;
  if (disturbance) console.error(`[bench] ${step.title}: ${disturbance}`);
  for (const r of results) {
    r.metrics.push(other);
    if (disturbance) r.details.disturbance = disturbance;
    for (const issue of (r.details.logIssues ?? []) as { level: string; msg: string; count: number; err?: string }[]) {
      console.error(
        `[bench] ${r.label}: the node logged ${issue.count} × ${issue.level} "${issue.msg}"${issue.err ? `: ${issue.err}` : ''}`,
      );
    }
    const rate = r.metrics.find((m) => m.name === 'batch events/s')?.value;
    if (r.scenario === 'ingest' && rate) batchRates.set(r.system, rate);
  }
  console.error(`[bench] ${step.title}: done in ${((performance.now() - cpuStart.atMs) / 1000).toFixed(0)} s`);
  return results;
}

/** `report <results.json>`: prints the summary of a finished run again and redraws its charts. */
function report(file: string): void {
  const run = JSON.parse(readFileSync(file, 'utf8')) as {
    results: ScenarioResult[];
    durationS?: number;
    failures?: { step: string; error: string }[];
  };
  printSummary(run.results, run.failures);
  for (const chart of renderCharts(file.replace(/\.json$/, ''), run.results)) console.log(`chart: ${chart}`);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv[0] === 'report' && argv.length === 2) return report(argv[1]);
  const { name, steps } = parseCommand(argv);
  const startedAt = new Date();
  const results: ScenarioResult[] = [];
  const failures: { step: string; error: string }[] = [];
  for (const step of steps) {
    try {
      results.push(...(await runStep(step)));
    } catch (err) {
      console.error(`[bench] ${step.title} failed:`, err);
      failures.push({ step: step.title, error: String(err) });
      process.exitCode = 1;
    }
  }
  const durationS = (Date.now() - startedAt.getTime()) / 1000;
  if (results.length === 0) return;
  console.log();
  printTable(results);
  console.log();
  printSummary(results, failures);
  const charts = renderCharts(resultsStem(name, startedAt), results);
  const file = writeResults(name, startedAt, results, { durationS, failures, summary: summaryFigures(results) });
  console.log(`\nduration: ${(durationS / 60).toFixed(1)} min`);
  console.log(`results: ${file}`);
  for (const chart of charts) console.log(`chart: ${chart}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
