/** How long the event loop is held while some work runs: for tests that bound it. */
import { monitorEventLoopDelay } from 'node:perf_hooks';

/**
 * Runs `work` while watching the event loop, two ways (a 1 ms timer's longest gap and the delay
 * histogram's max), and returns the larger as `delayMaxMs`, with `work`'s result and duration.
 */
export async function watchLoop<T>(work: () => Promise<T>): Promise<{ result: T; delayMaxMs: number; ms: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  let last = performance.now();
  let gapMax = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    gapMax = Math.max(gapMax, now - last);
    last = now;
  }, 1);
  const t0 = performance.now();
  const result = await work();
  const ms = performance.now() - t0;
  // One more tick of the timer, so a hold at the very end is seen.
  await new Promise((r) => setTimeout(r, 5));
  clearInterval(timer);
  histogram.disable();
  return { result, delayMaxMs: Math.max(gapMax, histogram.max / 1e6), ms };
}
