/**
 * The shape of a node's background loops (read-ahead, heartbeat, shard map, elector, rescuer,
 * cleaner, schedule materialiser, clock calibration, claim-lease renewal, the sources' poll): a pass, then a pause of `intervalMs` on the node's clock, until
 * the signal aborts. A pass reports its own failures; one that throws anyway ends nothing (the
 * error goes to `onError` and the next pass comes after the pause).
 */
import type { Clock } from './clock.ts';

export interface LoopOptions {
  /** Pause before the first pass too. */
  pauseFirst?: boolean;
  onError?(err: unknown): void;
}

/**
 * Runs until `signal` aborts; resolves once the pass in progress (if any) has ended. `intervalMs`
 * may be chosen after each pass from its result (undefined when it threw): a loop with work left
 * comes back sooner.
 */
export async function runEvery<T>(
  clock: Clock,
  intervalMs: number | ((result: T | undefined) => number),
  signal: AbortSignal,
  pass: () => Promise<T>,
  opts: LoopOptions = {},
): Promise<void> {
  const pauseMs = (result: T | undefined) => (typeof intervalMs === 'number' ? intervalMs : intervalMs(result));
  if (opts.pauseFirst && !(await pause(clock, pauseMs(undefined), signal))) return;
  for (;;) {
    let result: T | undefined;
    try {
      result = await pass();
    } catch (err) {
      opts.onError?.(err);
    }
    if (!(await pause(clock, pauseMs(result), signal))) return;
  }
}

/** Sleeps `ms`; false once `signal` has aborted. */
async function pause(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await clock.sleep(ms, signal);
    return true;
  } catch {
    return false;
  }
}
