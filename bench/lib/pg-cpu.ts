/**
 * The CPU of PostgreSQL instances, each apart (a Citus coordinator and each of its workers, or the
 * machine's server), from /proc (Linux). Where the machine.ts figures count every `postgres`
 * process of the machine together, these tell the instances apart by their postmaster.
 *
 * An instance's CPU so far: its postmaster's utime + stime + cutime + cstime (the backends it has
 * reaped) plus utime + stime of each of its live children (backends, background workers). A
 * backend that exits between two readings moves from the second term to the first, so the
 * difference of two readings counts it once. The postmaster's pid is the first line of
 * DATADIR/postmaster.pid, which only root and the postgres user can read: NaN otherwise.
 */
import { readFileSync } from 'node:fs';
import { CLOCK_TICKS_PER_S, liveProcesses, processCpuSeconds } from './machine.ts';
import { PG_URL, withPgClient } from './pg.ts';

export interface PgInstance {
  /** For tables: "PostgreSQL", "coordinator", "worker 1". */
  name: string;
  /** Its URL (trust authentication). */
  url: string;
  dataDir: string;
}

/** The postmaster's pid from DATADIR/postmaster.pid; undefined when it cannot be read (not root, or stopped). */
function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds so far of each instance, by name: one scan of /proc for all of them. The postmasters'
 * pids are read at each call, so one that restarted in between shows as a drop (a negative
 * difference), never as a plausible figure.
 */
export function pgInstancesCpuSeconds(instances: readonly PgInstance[]): Record<string, number> {
  const pids = new Map(instances.map((i) => [i.name, postmasterPid(i.dataDir)]));
  const children = new Map<number, number>();
  for (const p of liveProcesses()) children.set(p.f[1], (children.get(p.f[1]) ?? 0) + p.f[11] + p.f[12]);
  return Object.fromEntries(
    instances.map((i) => {
      const pid = pids.get(i.name);
      return [
        i.name,
        processCpuSeconds(pid, true) + (pid === undefined ? 0 : (children.get(pid) ?? 0)) / CLOCK_TICKS_PER_S,
      ];
    }),
  );
}

/** The machine's PostgreSQL (the bench's PG_URL) as an instance named "PostgreSQL", its data dir asked of it. */
export async function localPgInstance(): Promise<PgInstance> {
  const dataDir = await withPgClient(
    async (c) => (await c.query<{ data_directory: string }>('SHOW data_directory')).rows[0].data_directory,
  );
  return { name: 'PostgreSQL', url: PG_URL, dataDir };
}

/**
 * A Citus cluster's instances: the coordinator at `url`, then its workers ("worker 1", "worker 2",
 * ... by port) as the coordinator lists them (pg_dist_node's primaries outside group 0), each with
 * the data dir `dataDir(port)` gives. Loopback clusters only: the data dirs are read from here.
 */
export async function citusInstances(url: string, dataDir: (port: number) => string): Promise<PgInstance[]> {
  const workers = await withPgClient(
    async (c) =>
      (
        await c.query<{ nodename: string; nodeport: number }>(
          "SELECT nodename, nodeport FROM pg_dist_node WHERE noderole = 'primary' AND groupid > 0 ORDER BY nodeport",
        )
      ).rows,
    url,
  );
  const instance = (name: string, host: string, port: number): PgInstance => {
    const at = new URL(url);
    at.hostname = host;
    at.port = String(port);
    return { name, url: at.toString(), dataDir: dataDir(port) };
  };
  const coordinator = new URL(url);
  return [
    instance('coordinator', coordinator.hostname, Number(coordinator.port)),
    ...workers.map((w, i) => instance(`worker ${i + 1}`, w.nodename, w.nodeport)),
  ];
}
