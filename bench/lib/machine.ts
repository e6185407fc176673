/**
 * CPU and memory of the processes a scenario involves, from /proc (Linux only; NaN elsewhere).
 *
 * Three shares of the machine over a scenario:
 *   - the system's own firing process (the Belfry node, a peer's worker): `processCpuSeconds`;
 *   - the database servers (every `postgres` and `redis-server` process, plus the children they
 *     reaped): `serviceCpu` and `serviceCpuSince`;
 *   - everything else that is not the bench: `otherCpuMetric`, the machine's busy time minus the
 *     bench's own tree and the database servers. When it is high, the figures are not the
 *     system's alone (other engineers' test suites share this machine).
 *
 * At the start and the end of a scenario the bench has no live children (the node, the worker and
 * the receiver have exited and been reaped), so its own utime + stime + cutime + cstime covers
 * everything it started.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Metric } from './report.ts';

/** Clock ticks per second of /proc times (USER_HZ, 100 on Linux). */
export const CLOCK_TICKS_PER_S = 100;
/** Process names counted as database servers. */
const SERVICE_NAMES: ReadonlySet<string> = new Set(['postgres', 'redis-server']);

export interface CpuMark {
  atMs: number;
  machineBusyS: number;
  benchTreeS: number;
  services: ServiceCpu;
}

function machineBusySeconds(): number {
  // cpu  user nice system idle iowait irq softirq steal ...
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = fields;
  return (user + nice + system + irq + softirq + (steal ?? 0)) / CLOCK_TICKS_PER_S;
}

/** The fields of /proc/<pid>/stat after "(comm) ", and the comm; null when the process is gone. */
function procStat(pid: number | string): { comm: string; f: number[] } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    // state is [0]; utime, stime, cutime, cstime are [11]..[14].
    return { comm, f: stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number) };
  } catch {
    return null;
  }
}

/** utime + stime (+ cutime + cstime, the reaped children's, when `withChildren`) of a process, in seconds. */
export function processCpuSeconds(pid: number | undefined, withChildren = false): number {
  const s = pid === undefined ? null : procStat(pid);
  if (!s) return NaN;
  return (s.f[11] + s.f[12] + (withChildren ? s.f[13] + s.f[14] : 0)) / CLOCK_TICKS_PER_S;
}

/** CPU seconds of each database server process on the machine (by pid), reaped backends included. */
export type ServiceCpu = Map<string, number>;

export function serviceCpu(): ServiceCpu {
  const out: ServiceCpu = new Map();
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    // not Linux
  }
  for (const pid of pids) {
    const s = procStat(pid);
    if (s && SERVICE_NAMES.has(s.comm)) out.set(pid, (s.f[11] + s.f[12] + s.f[13] + s.f[14]) / CLOCK_TICKS_PER_S);
  }
  return out;
}

/**
 * CPU the database servers used between two snapshots: per process alive at the end, its growth
 * since the start (or all of it, when it started since). A process gone by the end drops out, so
 * a server restarted meanwhile (other test suites do that) makes the figure low, never negative.
 */
export function serviceCpuSince(start: ServiceCpu, end: ServiceCpu = serviceCpu()): number {
  let seconds = 0;
  for (const [pid, s] of end) seconds += Math.max(0, s - (start.get(pid) ?? 0));
  return seconds;
}

/** Peak resident set (VmHWM) of a live process in bytes; NaN when it is gone or not Linux. */
export function peakRssBytes(pid: number | undefined): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /VmHWM:\s+(\d+) kB/.exec(status);
    return kb ? Number(kb[1]) * 1024 : NaN;
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
  return { atMs: performance.now(), machineBusyS, benchTreeS: processCpuSeconds(process.pid, true), services: serviceCpu() };
}

function percentOfCore(seconds: number, start: CpuMark, end: CpuMark): number {
  return Math.max(0, (seconds * 100_000) / (end.atMs - start.atMs));
}

/** Average CPU of other processes (neither the bench nor the databases) between two marks, in % of one core. */
export function otherCpuMetric(start: CpuMark, end: CpuMark): Metric {
  const otherS = end.machineBusyS - start.machineBusyS - (end.benchTreeS - start.benchTreeS) - serviceCpuSince(start.services, end.services);
  return { name: 'CPU of other processes', value: percentOfCore(otherS, start, end), unit: '% of a core' };
}

/** CPU of the system's firing process and of the database servers over one measured window. */
export class CpuWindow {
  private readonly startMs = performance.now();
  private readonly processStartS: number;
  private readonly servicesStart = serviceCpu();

  constructor(private readonly processCpuS: () => number) {
    this.processStartS = processCpuS();
  }

  /**
   * [node/worker CPU, database CPU] in % of one core, from construction to now (or over
   * `elapsedMs`), each name after `prefix`. The first is NaN when the system has no such process.
   */
  metrics(prefix = '', elapsedMs = performance.now() - this.startMs): Metric[] {
    const pct = (s: number) => (elapsedMs > 0 ? (s * 100_000) / elapsedMs : NaN);
    return [
      { name: `${prefix}node/worker CPU`, value: pct(this.processCpuS() - this.processStartS), unit: '% of a core' },
      { name: `${prefix}database CPU`, value: pct(serviceCpuSince(this.servicesStart)), unit: '% of a core' },
    ].filter((m) => !Number.isNaN(m.value));
  }
}
