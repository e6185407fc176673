/**
 * CPU used on the machine by processes outside the bench, over a scenario: a figure measured while
 * other work competed for the cores is not the node's own. Linux only (/proc); NaN elsewhere.
 *
 * At the start and the end of a scenario the bench has no live children (the node and the
 * receiver have exited and been reaped), so its own utime + stime + cutime + cstime covers
 * everything it started; the machine's busy time minus that is everyone else's.
 */
import { readFileSync } from 'node:fs';
import type { Metric } from './report.ts';

/** Clock ticks per second of /proc times (USER_HZ, 100 on Linux). */
export const CLOCK_TICKS_PER_S = 100;

export interface CpuMark {
  atMs: number;
  machineBusyS: number;
  benchTreeS: number;
}

function machineBusySeconds(): number {
  // cpu  user nice system idle iowait irq softirq steal ...
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = fields;
  return (user + nice + system + irq + softirq + (steal ?? 0)) / CLOCK_TICKS_PER_S;
}

/** utime + stime (+ cutime + cstime, the reaped children's, when `withChildren`) of a process, in seconds. */
export function processCpuSeconds(pid: number | undefined, withChildren = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after "(comm) ": state is [0]; utime, stime, cutime, cstime are [11]..[14].
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    return (f[11] + f[12] + (withChildren ? f[13] + f[14] : 0)) / CLOCK_TICKS_PER_S;
  } catch {
    return NaN;
  }
}

export function cpuMark(): CpuMark {
  let machineBusyS = NaN;
  try {
    machineBusyS = machineBusySeconds();
  } catch {
    // not Linux
  }
  return { atMs: performance.now(), machineBusyS, benchTreeS: processCpuSeconds(process.pid, true) };
}

/** Average CPU of other processes between two marks, in % of one core. */
export function otherCpuMetric(start: CpuMark, end: CpuMark): Metric {
  const otherS = end.machineBusyS - start.machineBusyS - (end.benchTreeS - start.benchTreeS);
  return { name: 'CPU of other processes', value: Math.max(0, (otherS * 100_000) / (end.atMs - start.atMs)), unit: '% of a core' };
}
