/** What every scenario is given and returns, and the scheduling loop they share. */
import { runConcurrently } from '../lib/http.ts';
import type { ReceiverProcess } from '../lib/receiver-process.ts';
import type { ScenarioOptions, ScenarioResult } from '../lib/report.ts';
import type { BatchTally } from '../lib/schedule.ts';
import { BATCH_SIZE, benchEvents, type System } from '../systems/system.ts';

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
