/**
 * The Belfry code under simulation, loaded from a source tree: this repository's by default, or
 * another checkout's (`--src /path/to/src`, BELFRY_SIM_SRC), so the same simulation runs against
 * an older commit unchanged. Modules a tree does not have (the occurrence gate before it existed)
 * are null, and the node is composed without them, as that commit's node was.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

type ClusterModule = typeof import('../../src/cluster/cluster.ts');
type SchedulerModule = typeof import('../../src/scheduler/scheduler.ts');
type RescuerModule = typeof import('../../src/maintenance/rescuer.ts');
type MaterialiserModule = typeof import('../../src/schedules/materialiser.ts');
type GateModule = typeof import('../../src/schedules/occurrence-gate.ts');
type BulkModule = typeof import('../../src/bulk/runner.ts');
type DispatcherModule = typeof import('../../src/dispatch/dispatcher.ts');
type PullModule = typeof import('../../src/pull/settle.ts');
type PullExpirerModule = typeof import('../../src/pull/expirer.ts');
type MetricsModule = typeof import('../../src/node/metrics.ts');
type SqliteModule = typeof import('../../src/store/sqlite/sqlite-store.ts');
type ShardModule = typeof import('../../src/core/shard.ts');
type SchedulesModule = typeof import('../../src/store/schedules.ts');
type StoreModule = typeof import('../../src/store/store.ts');

export interface Belfry {
  /** The source tree's root (…/src). */
  root: string;
  cluster: ClusterModule;
  scheduler: SchedulerModule;
  rescuer: RescuerModule;
  materialiser: MaterialiserModule;
  /** Null in a tree without it (before the schedules' missed rule was judged at fire time). */
  gate: GateModule | null;
  /** Null in a tree without bulk jobs. */
  bulk: BulkModule | null;
  dispatcher: DispatcherModule;
  pullExpirer: PullExpirerModule;
  pull: PullModule;
  metrics: MetricsModule;
  sqlite: SqliteModule;
  shard: ShardModule;
  schedules: SchedulesModule;
  store: StoreModule;
}

export const DEFAULT_SRC = resolve(fileURLToPath(new URL('../../src', import.meta.url)));

const loaded = new Map<string, Promise<Belfry>>();

/**
 * A module of the tree at `root`: the first of `paths` that exists there (a module that moved
 * lists its new place first and its old ones after, so older trees given by --src still load).
 */
async function load<T>(root: string, paths: string | string[]): Promise<T> {
  const list = typeof paths === 'string' ? [paths] : paths;
  const found = list.find((path) => existsSync(join(root, path))) ?? list[0];
  return (await import(pathToFileURL(join(root, found)).href)) as T;
}

async function loadOptional<T>(root: string, paths: string | string[]): Promise<T | null> {
  const list = typeof paths === 'string' ? [paths] : paths;
  return list.some((path) => existsSync(join(root, path))) ? load<T>(root, list) : null;
}

/** The modules of the tree at `root` (loaded once per process). */
export function loadBelfry(root: string = process.env.BELFRY_SIM_SRC ?? DEFAULT_SRC): Promise<Belfry> {
  const abs = resolve(root);
  let p = loaded.get(abs);
  if (!p) {
    p = (async () => ({
      root: abs,
      cluster: await load<ClusterModule>(abs, ['cluster/cluster.ts', 'node/cluster.ts']),
      scheduler: await load<SchedulerModule>(abs, 'scheduler/scheduler.ts'),
      rescuer: await load<RescuerModule>(abs, ['maintenance/rescuer.ts', 'scheduler/rescuer.ts']),
      materialiser: await load<MaterialiserModule>(abs, ['schedules/materialiser.ts', 'scheduler/materialiser.ts']),
      gate: await loadOptional<GateModule>(abs, ['schedules/occurrence-gate.ts', 'scheduler/occurrence-gate.ts']),
      bulk: await loadOptional<BulkModule>(abs, ['bulk/runner.ts', 'scheduler/bulk-runner.ts']),
      dispatcher: await load<DispatcherModule>(abs, 'dispatch/dispatcher.ts'),
      pullExpirer: await load<PullExpirerModule>(abs, ['pull/expirer.ts', 'dispatch/pull-expirer.ts']),
      pull: await load<PullModule>(abs, ['pull/settle.ts', 'dispatch/pull.ts']),
      metrics: await load<MetricsModule>(abs, 'node/metrics.ts'),
      sqlite: await load<SqliteModule>(abs, 'store/sqlite/sqlite-store.ts'),
      shard: await load<ShardModule>(abs, 'core/shard.ts'),
      schedules: await load<SchedulesModule>(abs, 'store/schedules.ts'),
      store: await load<StoreModule>(abs, 'store/store.ts'),
    }))();
    loaded.set(abs, p);
  }
  return p;
}
