/**
 * GET /readyz for one node: starting, shutting down, no shards (a cluster node), the store not
 * answering, the disk full or the file damaged. Stable reason codes only: /readyz is
 * unauthenticated, and a store's error text names hosts, files and users (the errors go to the log).
 */
import type { Logger } from 'pino';
import type { Cluster } from '../cluster/cluster.ts';
import type { Store } from '../store/store.ts';
import type { StorageWatch } from './storage-watch.ts';

export class Readiness {
  /** Set once every service runs: until then /readyz says `starting`. */
  started = false;
  stopping = false;
  /** The store's ping failed last time (its error is logged once, not answered). */
  private storeDown = false;

  constructor(
    private readonly deps: {
      store: Store;
      cluster: Cluster | null;
      storage: StorageWatch | null;
      logger: Logger;
    },
  ) {}

  async check(): Promise<{ ok: boolean; reasons: string[] }> {
    const { store, cluster, storage, logger } = this.deps;
    const reasons: string[] = [];
    if (this.stopping) reasons.push('shutting_down');
    else if (!this.started) reasons.push('starting');
    if (cluster && cluster.ownership.shards().length === 0) reasons.push('no_shards');
    try {
      await store.ping();
      if (this.storeDown) logger.info('readiness: the store answers again');
      this.storeDown = false;
    } catch (err) {
      if (!this.storeDown) logger.warn({ err: (err as Error).message }, 'readiness: the store does not answer');
      this.storeDown = true;
      reasons.push('store_unreachable');
    }
    if (storage) reasons.push(...(await storage.reasons()));
    return { ok: reasons.length === 0, reasons };
  }
}
