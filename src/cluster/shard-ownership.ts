/**
 * This node's view of the shards it owns: read from the stored shard map every interval, and
 * empty whenever membership says this node may not act (its heartbeat is too old).
 * Calls `onChange` when the set changes, so the scheduler re-reads from the start for new shards
 * and forgets entries of shards it lost.
 */
import { runEvery } from '../core/loop.ts';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { Store } from '../store/store.ts';
import type { Membership } from './membership.ts';

export class ShardOwnership {
  private owned: number[] = [];
  private ownedSet = new Set<number>();
  private abort = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(
    private readonly deps: {
      store: Pick<Store, 'shardList'>;
      clock: Clock;
      nodeId: string;
      membership: Membership;
      logger: Logger;
      onChange(owned: number[]): void;
    },
    private readonly intervalMs = 250,
  ) {}

  /** The shards this node may fire now. */
  shards(): number[] {
    if (!this.deps.membership.isAlive()) {
      if (this.owned.length > 0) this.set([]);
      return this.owned;
    }
    return this.owned;
  }

  has(shard: number): boolean {
    return this.ownedSet.has(shard) && this.deps.membership.isAlive();
  }

  async runOnce(): Promise<number[]> {
    if (!this.deps.membership.isAlive()) {
      if (this.owned.length > 0) this.set([]);
      return this.owned;
    }
    const map = await this.deps.store.shardList();
    const mine = map
      .filter((a) => a.nodeId === this.deps.nodeId)
      .map((a) => a.shard)
      .sort((a, b) => a - b);
    if (mine.length !== this.owned.length || mine.some((s, i) => s !== this.owned[i])) this.set(mine);
    return this.owned;
  }

  private set(shards: number[]): void {
    const gained = shards.filter((s) => !this.ownedSet.has(s)).length;
    const lost = this.owned.length - (shards.length - gained);
    this.owned = shards;
    this.ownedSet = new Set(shards);
    this.deps.logger.info({ owned: shards.length, gained, lost }, 'shard ownership changed');
    this.deps.onChange(shards);
  }

  start(): void {
    this.abort = new AbortController();
    this.loop = runEvery(this.deps.clock, this.intervalMs, this.abort.signal, () =>
      this.runOnce().catch((err) => this.deps.logger.warn({ err }, 'reading the shard map failed')),
    );
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    this.set([]);
  }
}
