/** What every scenario is given and returns, the scheduling loop they share, and running one on a system. */
import { runConcurrently } from '../lib/http.ts';
import { CpuWindow } from '../lib/machine.ts';
import { startReceiverProcess, type ReceiverProcess } from '../lib/receiver-process.ts';
import type { ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import type { BatchTally } from '../lib/schedule.ts';
import { BATCH_SIZE, benchEvents, DATABASE_SERVER, type System, type SystemOptions } from '../systems/system.ts';

export interface ScenarioContext {
  system: System;
  /** The receiver the system delivers to; null for scenarios that fire nothing. */
  rx: ReceiverProcess | null;
  opts: ScenarioOptions;
  /** This system's batch scheduling rate measured earlier in the run (events/s), to size leads. */
  batchRate: number | null;
}

export interface Scenario {
  name: string;
  needsReceiver: boolean;
  run(ctx: ScenarioContext): Promise<ScenarioResult>;
}

/** Scheduling rate assumed when none was measured yet (events/s). */
const BATCH_RATE_FALLBACK = 10_000;

/** How long scheduling `n` events in batches will take, with a margin: for the lead before a due time. */
export function schedulingMsEstimate(n: number, batchRate: number | null): number {
  return Math.ceil((n * 1000) / (0.75 * (batchRate ?? BATCH_RATE_FALLBACK)));
}

/** Schedules events [0, n) with ids `<prefix><i>` due at `dueAt(i)`, in batches, `concurrency` calls at a time. */
export async function scheduleInBatches(
  system: System,
  prefix: string,
  n: number,
  dueAt: (i: number) => number,
  concurrency: number,
  schedule: System['scheduleBatch'] = (events, tally) => system.scheduleBatch(events, tally),
): Promise<BatchTally> {
  const tally: BatchTally = { acknowledged: 0, failed: 0 };
  const batches = Math.ceil(n / BATCH_SIZE);
  await runConcurrently(batches, concurrency, (b) =>
    schedule(benchEvents(prefix, b * BATCH_SIZE, Math.min(n, (b + 1) * BATCH_SIZE), dueAt), tally),
  );
  return tally;
}

/** "fire · Belfry · SQLite". */
export function resultLabel(scenario: string, system: System): string {
  return `${scenario} · ${system.info.label}`;
}

/** A CpuWindow over `system`'s firing process, its database server and, where it tells them apart, that database's instances. */
export function systemCpuWindow(system: System): CpuWindow {
  return new CpuWindow(
    () => system.cpuSeconds(),
    DATABASE_SERVER[system.info.key],
    system.databaseCpuSeconds?.bind(system),
  );
}

/**
 * Runs `scenario` once on the system `start` starts (delivering to a receiver process of its own
 * when the scenario needs one), then stops both. The warnings and errors the system logged go
 * into the result's `details.logIssues`.
 */
export async function runOnSystem(
  scenario: Scenario,
  start: (opts: SystemOptions) => Promise<System>,
  opts: ScenarioOptions,
  batchRate: number | null,
  maxConcurrency?: number,
): Promise<ScenarioResult> {
  const rx = scenario.needsReceiver ? await startReceiverProcess(opts.channel) : null;
  let system: System | null = null;
  try {
    system = await start({
      receiverUrl: rx?.url ?? null,
      destination: rx?.destination ?? null,
      connections: 64,
      maxConcurrency,
    });
    const result = await scenario.run({ system, rx, opts, batchRate });
    const issues = system.logIssues?.() ?? [];
    if (issues.length > 0) result.details.logIssues = issues;
    return result;
  } finally {
    await system?.stop();
    await rx?.close();
  }
}
