/**
 * Who used the machine's CPU between two snapshots (Linux /proc; empty elsewhere): for a timing
 * test to print beside its figures, so that a failure on a busy machine says what kept it busy.
 */
import { CLOCK_TICKS_PER_S, liveProcesses, machineBusySeconds, percentOfCore } from '../../bench/lib/machine.ts';

export interface CpuSnapshot {
  atMs: number;
  /** The machine's busy CPU seconds (NaN where there is no /proc). */
  busyS: number;
  /** Each live process's name and CPU seconds (utime + stime). */
  byPid: Map<string, { comm: string; seconds: number }>;
}

export function cpuSnapshot(): CpuSnapshot {
  const byPid = new Map<string, { comm: string; seconds: number }>();
  for (const p of liveProcesses()) byPid.set(p.pid, { comm: p.comm, seconds: (p.f[11] + p.f[12]) / CLOCK_TICKS_PER_S });
  return { atMs: performance.now(), busyS: machineBusySeconds(), byPid };
}

/**
 * Between `start` and `end`: the machine's busy share and the `n` busiest processes alive at the
 * end, each in % of one core, named by `names` (pid → a name of the test's own) or their comm.
 */
export function busiestBetween(
  start: CpuSnapshot,
  end: CpuSnapshot,
  names: ReadonlyMap<number, string> = new Map(),
  n = 6,
): { machinePct: number; busiest: { process: string; pct: number }[] } {
  const pct = (seconds: number) => Math.round(percentOfCore(seconds, start, end));
  const busiest = [...end.byPid]
    .map(([pid, p]) => ({
      process: `${names.get(Number(pid)) ?? p.comm} (${pid})`,
      seconds: p.seconds - (start.byPid.get(pid)?.seconds ?? 0),
    }))
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, n)
    .map(({ process, seconds }) => ({ process, pct: pct(seconds) }));
  return { machinePct: pct(end.busyS - start.busyS), busiest };
}
