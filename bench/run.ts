/**
 * The benchmark command:
 *
 *   npm run bench -- <scenario|all> [--n N] [--rate R] [--duration 30s] [--concurrency C] [--store sqlite]
 *
 * Each scenario runs against a fresh node: a real separate process on SQLite in a temp dir,
 * driven over loopback HTTP. Prints a table and writes bench/results/<scenario>-<timestamp>.json.
 */
import { parseArgs } from 'node:util';
import { parseDurationMs } from '../src/core/duration.ts';
import { cpuMark, otherCpuMetric } from './lib/machine.ts';
import { startBenchNode, type BenchNode } from './lib/node.ts';
import { printTable, writeResults, type ScenarioOptions, type ScenarioResult } from './lib/report.ts';
import { fire } from './scenarios/fire.ts';
import { ingestBatch } from './scenarios/ingest-batch.ts';
import { ingestSingle } from './scenarios/ingest-single.ts';
import { precision } from './scenarios/precision.ts';

type Scenario = (node: BenchNode, opts: ScenarioOptions) => Promise<ScenarioResult>;

const SCENARIOS: Record<string, Scenario> = {
  'ingest-batch': ingestBatch,
  'ingest-single': ingestSingle,
  fire,
  precision,
};

/** `all`: each of these against its own node, in order; --rate does not apply. */
const ALL: { name: string; rate?: number }[] = [
  { name: 'ingest-batch' },
  { name: 'ingest-single' },
  { name: 'fire' },
  { name: 'precision', rate: 1_000 },
  { name: 'precision', rate: 5_000 },
];

const USAGE = `usage: npm run bench -- <${[...Object.keys(SCENARIOS), 'all'].join('|')}> [--n N] [--rate R] [--duration 30s] [--concurrency C] [--store sqlite]`;

function positiveInt(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text.replaceAll('_', ''));
  if (!Number.isInteger(value) || value <= 0) throw new Error(`--${name} must be a positive integer, got "${text}"`);
  return value;
}

function parseCommand(argv: string[]): { name: string; store: string; opts: ScenarioOptions } {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      n: { type: 'string' },
      rate: { type: 'string' },
      duration: { type: 'string' },
      concurrency: { type: 'string' },
      store: { type: 'string', default: 'sqlite' },
    },
  });
  const name = positionals[0];
  if (positionals.length !== 1 || !(name in SCENARIOS || name === 'all')) throw new Error(USAGE);
  if (name === 'all' && values.rate !== undefined) throw new Error('--rate does not apply to "all" (it runs precision at 1,000/s and 5,000/s)');
  let durationMs: number | undefined;
  if (values.duration !== undefined) {
    const ms = parseDurationMs(/^\d+$/.test(values.duration) ? Number(values.duration) : values.duration);
    if (ms === null || ms < 1_000) throw new Error(`--duration must be a duration of at least 1s ("30s", "2m"), got "${values.duration}"`);
    durationMs = ms;
  }
  const opts: ScenarioOptions = {
    n: positiveInt('n', values.n),
    rate: positiveInt('rate', values.rate),
    concurrency: positiveInt('concurrency', values.concurrency),
    durationMs,
  };
  return { name, store: values.store!, opts };
}

async function runOne(name: string, store: string, opts: ScenarioOptions): Promise<ScenarioResult> {
  const label = name + (opts.rate ? ` @ ${opts.rate}/s` : '');
  console.error(`[bench] ${label}: starting a node`);
  const cpuStart = cpuMark();
  const node = await startBenchNode(store);
  let result: ScenarioResult;
  try {
    result = await SCENARIOS[name](node, opts);
  } finally {
    await node.stop();
  }
  result.metrics.push(otherCpuMetric(cpuStart, cpuMark()));
  console.error(`[bench] ${label}: done`);
  return result;
}

async function main(): Promise<void> {
  const { name, store, opts } = parseCommand(process.argv.slice(2));
  const startedAt = new Date();
  const plan = name === 'all' ? ALL.map((s) => ({ name: s.name, opts: { ...opts, rate: s.rate } })) : [{ name, opts }];
  const results: ScenarioResult[] = [];
  for (const step of plan) {
    try {
      results.push(await runOne(step.name, store, step.opts));
    } catch (err) {
      console.error(`[bench] ${step.name} failed:`, err);
      process.exitCode = 1;
    }
  }
  if (results.length === 0) return;
  console.log();
  printTable(results);
  console.log(`\nresults: ${writeResults(name, startedAt, results)}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
