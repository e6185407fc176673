/** How long the event loop is held while some work runs: for tests that bound it. */
import { monitorEventLoopDelay } from 'node:perf_hooks';

export interface LoopWatch<T> {
  result: T;
  /** Longest wall-clock gap between two turns of the loop: a 1 ms timer's longest gap or the delay histogram's max, the larger. */
  delayMaxMs: number;
  /**
   * Most CPU time the main thread spent between two turns of a 1 ms timer: the loop held by
   * work done on it (code and the garbage collector's share), without the time the operating
   * system ran other processes instead (which a wall-clock gap counts, and which no code of ours
   * controls on a loaded 2-core machine). For pure computation only: a blocking system call
   * (a synchronous fsync) holds the loop without spending CPU, and only `delayMaxMs` sees it.
   */
  cpuHeldMaxMs: number;
  /** How long `work` took. */
  ms: number;
}

function threadCpuMs(): number {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
}

/** Runs `work` while watching the event loop; see LoopWatch. */
export async function watchLoop<T>(work: () => Promise<T>): Promise<LoopWatch<T>> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  let last = performance.now();
  let lastCpu = threadCpuMs();
  let gapMax = 0;
  let cpuMax = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    const cpu = threadCpuMs();
    gapMax = Math.max(gapMax, now - last);
    cpuMax = Math.max(cpuMax, cpu - lastCpu);
    last = now;
    lastCpu = cpu;
  }, 1);
  const t0 = performance.now();
  const result = await work();
  const ms = performance.now() - t0;
  // One more tick of the timer, so a hold at the very end is seen.
  await new Promise((r) => setTimeout(r, 5));
  clearInterval(timer);
  histogram.disable();
  return { result, delayMaxMs: Math.max(gapMax, histogram.max / 1e6), cpuHeldMaxMs: cpuMax, ms };
}
