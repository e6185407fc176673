/**
 * The simulation's command line (docs/simulation.md):
 *
 *   npm run sim -- --seeds 1000                 seeds 1..1000, the default faults
 *   npm run sim -- --seeds 500 --from 20000     seeds 20000..20499
 *   npm run sim -- --seeds 200 --faults kill,clock,partition
 *   npm run sim -- --seed 4711                  one seed, its violations and trace (the last lines)
 *   npm run sim -- --seed 4711 --trace          the same with every trace line
 *   npm run sim -- --seeds 200 --src /path/to/other/checkout/src
 *
 * Exits 1 when any seed breaks an invariant, printing for each the command that repeats it.
 */
import { parseArgs } from 'node:util';
import { DEFAULT_FAULTS, FAULT_KINDS, simulate, type FaultKind, type SimResult } from '../test/sim/simulate.ts';

const { values } = parseArgs({
  options: {
    seeds: { type: 'string' },
    from: { type: 'string', default: '1' },
    seed: { type: 'string' },
    faults: { type: 'string' },
    src: { type: 'string' },
    nodes: { type: 'string' },
    duration: { type: 'string' },
    trace: { type: 'boolean', default: false },
    'no-costs': { type: 'boolean', default: false },
    'stop-on-failure': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

function usage(message?: string): never {
  if (message) console.error(message);
  console.error(
    'usage: npm run sim -- (--seeds N [--from S] | --seed S [--trace]) [--faults a,b,...] [--nodes 3..5] [--duration ms] [--src path/to/src] [--no-costs] [--stop-on-failure]\n' +
      `faults: ${FAULT_KINDS.join(', ')}, or none\ndefault: ${DEFAULT_FAULTS.join(', ')}`,
  );
  process.exit(message ? 2 : 0);
}

if (values.help) usage();
const int = (name: string, v: string | undefined): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) usage(`--${name} must be a non-negative integer`);
  return n;
};
// `--faults none`: the workload alone, no fault at all.
const faults =
  values.faults === 'none'
    ? []
    : (values.faults
        ?.split(',')
        .map((f) => f.trim())
        .filter(Boolean) as FaultKind[] | undefined);
for (const f of faults ?? []) if (!FAULT_KINDS.includes(f)) usage(`unknown fault "${f}"`);
const nodes = int('nodes', values.nodes);
if (nodes !== undefined && (nodes < 1 || nodes > 9)) usage('--nodes must be 1 to 9');
const durationMs = int('duration', values.duration);
const common = { faults, src: values.src, nodes, durationMs, costs: !values['no-costs'] };

function repeatCommand(seed: number): string {
  const parts = [`npm run sim -- --seed ${seed}`];
  if (values.faults) parts.push(`--faults ${values.faults}`);
  if (values.src) parts.push(`--src ${values.src}`);
  if (nodes !== undefined) parts.push(`--nodes ${nodes}`);
  if (durationMs !== undefined) parts.push(`--duration ${durationMs}`);
  if (values['no-costs']) parts.push('--no-costs');
  return parts.join(' ');
}

function describe(r: SimResult): string {
  const struck =
    Object.entries(r.struck)
      .map(([k, n]) => `${k}×${n}`)
      .join(' ') || 'none';
  const st = r.stats;
  return `seed ${r.seed}: ${r.ok ? 'ok' : `${r.violationCount} VIOLATIONS`} · ${r.nodes} nodes · faults struck ${struck} · ${st.events} events, ${st.attempts} pushed attempts, ${st.pullClaims} pulled, ${st.duplicates} sent again after a delivery (each after a timeout or a fault) · database busy ${((100 * st.dbBusyMs) / r.simulatedMs).toFixed(0)} %, a call queued ${st.dbQueuedMsMax} ms at most · ${(r.simulatedMs / 1000).toFixed(0)} s simulated in ${r.wallMs} ms · trace ${r.traceDigest}`;
}

function printViolations(r: SimResult, max: number): void {
  for (const v of r.violations.slice(0, max))
    console.log(`  ${v.invariant} at ${(v.atMs / 1000).toFixed(3)} s: ${v.detail}`);
  if (r.violationCount > max) console.log(`  … ${r.violationCount - max} more`);
}

if (values.seed !== undefined) {
  const seed = int('seed', values.seed)!;
  const r = await simulate({ seed, ...common, fullTrace: values.trace });
  console.log(r.trace.join('\n'));
  console.log('');
  console.log(describe(r));
  printViolations(r, 50);
  process.exit(r.ok ? 0 : 1);
}

const count = int('seeds', values.seeds);
if (count === undefined || count === 0) usage('give --seeds N or --seed S');
const from = int('from', values.from)!;
const started = performance.now();
const failed: SimResult[] = [];
const invariants = new Map<string, number>();
const struckTotal = new Map<string, number>();
let simulatedMs = 0;
let events = 0;
let attempts = 0;
for (let seed = from; seed < from + count; seed++) {
  const r = await simulate({ seed, ...common });
  simulatedMs += r.simulatedMs;
  events += r.stats.events;
  attempts += r.stats.attempts;
  for (const [k, n] of Object.entries(r.struck)) struckTotal.set(k, (struckTotal.get(k) ?? 0) + n);
  if (!r.ok) {
    failed.push(r);
    console.log(describe(r));
    printViolations(r, 5);
    console.log(`  repeat: ${repeatCommand(seed)}`);
    for (const v of new Set(r.violations.map((v) => v.invariant))) invariants.set(v, (invariants.get(v) ?? 0) + 1);
    if (values['stop-on-failure']) break;
  } else if ((seed - from + 1) % 50 === 0) {
    const s = (performance.now() - started) / 1000;
    console.log(`… ${seed - from + 1} seeds, ${failed.length} failed, ${((seed - from + 1) / s).toFixed(2)} seeds/s`);
  }
}
const seconds = (performance.now() - started) / 1000;
const ran = failed.length > 0 && values['stop-on-failure'] ? failed[failed.length - 1].seed - from + 1 : count;
console.log('');
console.log(
  `${ran} seeds (${from}..${from + ran - 1}) in ${seconds.toFixed(1)} s: ${(ran / seconds).toFixed(2)} seeds/s, ${(simulatedMs / 1000 / seconds).toFixed(0)} simulated s per s`,
);
console.log(`  ${events} events, ${attempts} delivery attempts, ${(simulatedMs / 1000).toFixed(0)} s simulated`);
console.log(`  faults struck: ${[...struckTotal].map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}`);
if (failed.length === 0) console.log('  every invariant held');
else {
  console.log(
    `  ${failed.length} seeds broke invariants: ${[...invariants].map(([k, n]) => `${k} (${n} seeds)`).join(', ')}`,
  );
  console.log(`  seeds: ${failed.map((r) => r.seed).join(' ')}`);
}
process.exit(failed.length === 0 ? 0 : 1);
