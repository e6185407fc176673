/**
 * The shape of a node's background loops (read-ahead, heartbeat, shard map, elector, rescuer,
 * cleaner, schedule materialiser): a pass, then a pause of `intervalMs` on the node's clock, until
 * the signal aborts. A pass reports its own failures; one that throws anyway ends nothing (the
 * error goes to `onError` and the next pass comes after the pause).
 */
import type { Clock } from './clock.ts';

export interface LoopOptions {
  /** Pause before the first pass too. */
  pauseFirst?: boolean;
  onError?(err: unknown): void;
}

/** Runs until `signal` aborts; resolves once the pass in progress (if any) has ended. */
export async function runEvery(clock: Clock, intervalMs: number, signal: AbortSignal, pass: () => Promise<unknown>, opts: LoopOptions = {}): Promise<void> {
  if (opts.pauseFirst && !(await pause(clock, intervalMs, signal))) return;
  for (;;) {
    try {
      await pass();
    } catch (err) {
      opts.onError?.(err);
    }
    if (!(await pause(clock, intervalMs, signal))) return;
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
