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
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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

/** CPU seconds the whole machine has been busy (every core), from /proc/stat; NaN where there is none (not Linux). */
export function machineBusySeconds(): number {
  let stat: string;
  try {
    stat = readFileSync('/proc/stat', 'utf8');
  } catch {
    return NaN;
  }
  // cpu  user nice system idle iowait irq softirq steal ...
  const fields = stat.split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = fields;
  return (user + nice + system + irq + softirq + (steal ?? 0)) / CLOCK_TICKS_PER_S;
}

/** The fields of /proc/<pid>/stat after "(comm) ", and the comm; null when the process is gone. */
function procStat(pid: number | string): { comm: string; f: number[] } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    // state is [0]; utime, stime, cutime, cstime are [11]..[14].
    return {
      comm,
      f: stat
        .slice(stat.lastIndexOf(')') + 2)
        .split(' ')
        .map(Number),
    };
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

/** A live process: its pid, name and /proc stat fields as procStat gives them ([1] is the parent's pid). */
export interface LiveProcess {
  pid: string;
  comm: string;
  f: number[];
}

/** Every live process of the machine, from /proc; none where there is no /proc. */
export function liveProcesses(): LiveProcess[] {
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    // not Linux
  }
  const out: LiveProcess[] = [];
  for (const pid of pids) {
    const s = procStat(pid);
    if (s) out.push({ pid, ...s });
  }
  return out;
}

/** CPU seconds of each database server process on the machine (by pid, with its name), reaped backends included. */
export type ServiceCpu = Map<string, { name: string; seconds: number }>;

export function serviceCpu(): ServiceCpu {
  const out: ServiceCpu = new Map();
  for (const s of liveProcesses()) {
    if (SERVICE_NAMES.has(s.comm))
      out.set(s.pid, { name: s.comm, seconds: (s.f[11] + s.f[12] + s.f[13] + s.f[14]) / CLOCK_TICKS_PER_S });
  }
  return out;
}

/**
 * CPU the database servers used between two snapshots: per process alive at the end, its growth
 * since the start (or all of it, when it started since). A process gone by the end drops out, so
 * a server restarted meanwhile (other test suites do that) makes the figure low, never negative.
 * With `name`, only the processes of that server ("postgres", "redis-server").
 */
export function serviceCpuSince(start: ServiceCpu, end: ServiceCpu = serviceCpu(), name?: string): number {
  let seconds = 0;
  for (const [pid, s] of end) {
    if (name === undefined || s.name === name) seconds += Math.max(0, s.seconds - (start.get(pid)?.seconds ?? 0));
  }
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
  return {
    atMs: performance.now(),
    machineBusyS: machineBusySeconds(),
    benchTreeS: processCpuSeconds(process.pid, true),
    services: serviceCpu(),
  };
}

/** CPU `seconds` spent between two marks, in % of one core. */
export function percentOfCore(seconds: number, start: { atMs: number }, end: { atMs: number }): number {
  return Math.max(0, (seconds * 100_000) / (end.atMs - start.atMs));
}

/** Average CPU of other processes (neither the bench nor the databases) between two marks, in % of one core. */
export function otherCpuMetric(start: CpuMark, end: CpuMark): Metric {
  const otherS =
    end.machineBusyS -
    start.machineBusyS -
    (end.benchTreeS - start.benchTreeS) -
    serviceCpuSince(start.services, end.services);
  return { name: 'CPU of other processes', value: percentOfCore(otherS, start, end), unit: '% of a core' };
}

/** What a system's processes spent over a CpuWindow, in CPU seconds. */
export interface CpuSpent {
  /** The node or the peer's worker; 0 when the system has no such process in this step (a peer's ingest). */
  processS: number;
  hasProcess: boolean;
  /** The system's own database server (every process of it), 0 for none (SQLite is in the node). */
  databaseS: number;
  databaseServer: string | null;
  /** The bench process itself: the client that schedules (HTTP for Belfry, the peer's library). */
  benchS: number;
  /** Every database server on the machine (PostgreSQL and Redis), as the "database CPU" % figure counts. */
  allDatabasesS: number;
  /** Each instance of the system's database apart, by name (a Citus coordinator and its workers), where the system reports them. */
  instancesS?: Record<string, number>;
  elapsedMs: number;
  events: number;
}

const ON_LINUX = existsSync('/proc/self/stat');

/** CPU µs per event: (node/worker + its database) CPU seconds / events × 1e6; NaN without events or /proc. */
export function cpuMicrosPerEvent(seconds: number, events: number): number {
  return ON_LINUX && events > 0 ? (seconds / events) * 1e6 : NaN;
}

function benchCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

function instancesSince(start: Record<string, number>, end: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(end).map(([name, s]) => [name, s - (start[name] ?? NaN)]));
}

/** CPU of the system's firing process and of the database servers over one measured window. */
export class CpuWindow {
  private readonly startMs = performance.now();
  private readonly processStartS: number;
  private readonly benchStartS = benchCpuSeconds();
  private readonly servicesStart = serviceCpu();
  private readonly instancesStartS: Record<string, number> | undefined;

  /**
   * `processCpuS`: the node's or worker's CPU seconds so far (NaN when there is none);
   * `databaseServer`: the process name of the system's own database server, null for none;
   * `instancesCpuS`: the CPU seconds so far of each instance of that database, by name.
   */
  constructor(
    private readonly processCpuS: () => number,
    private readonly databaseServer: string | null = null,
    private readonly instancesCpuS?: () => Record<string, number>,
  ) {
    this.processStartS = processCpuS();
    this.instancesStartS = instancesCpuS?.();
  }

  /** What the processes spent from construction to now; `elapsedMs` is the window the % figures are over. */
  spent(events: number, elapsedMs = performance.now() - this.startMs): CpuSpent {
    const processS = this.processCpuS() - this.processStartS;
    const services = serviceCpu();
    return {
      processS: Number.isNaN(processS) ? 0 : processS,
      hasProcess: !Number.isNaN(processS),
      databaseS: this.databaseServer === null ? 0 : serviceCpuSince(this.servicesStart, services, this.databaseServer),
      databaseServer: this.databaseServer,
      benchS: benchCpuSeconds() - this.benchStartS,
      allDatabasesS: serviceCpuSince(this.servicesStart, services),
      instancesS: this.instancesStartS && instancesSince(this.instancesStartS, this.instancesCpuS!()),
      elapsedMs,
      events,
    };
  }
}

/**
 * The figures of a window, each name after `prefix`: node/worker CPU (when the system has that
 * process) and database CPU (every database server on the machine) in % of one core; `CPU µs per
 * event` (node/worker + the system's own database server, per event); with `client`, `bench client
 * CPU µs per event` (the bench process, which schedules: HTTP for Belfry, a peer's library).
 */
export function cpuMetrics(spent: CpuSpent, prefix = '', client = false): Metric[] {
  const pct = (s: number) => (spent.elapsedMs > 0 ? (s * 100_000) / spent.elapsedMs : NaN);
  const metrics: Metric[] = [];
  if (spent.hasProcess)
    metrics.push({ name: `${prefix}node/worker CPU`, value: pct(spent.processS), unit: '% of a core' });
  metrics.push({ name: `${prefix}database CPU`, value: pct(spent.allDatabasesS), unit: '% of a core' });
  metrics.push({
    name: `${prefix}CPU µs per event`,
    value: cpuMicrosPerEvent(spent.processS + spent.databaseS, spent.events),
    unit: 'µs',
  });
  if (client)
    metrics.push({
      name: `${prefix}bench client CPU µs per event`,
      value: cpuMicrosPerEvent(spent.benchS, spent.events),
      unit: 'µs',
    });
  return metrics.filter((m) => !Number.isNaN(m.value));
}
