/**
 * The elector: holds or seeks the leader lease, and while leader keeps the shard map balanced over
 * the live nodes.
 *
 *   follower ──lease free or expired──▶ leader (epoch + 1) ──extend every interval──▶ leader
 *       ▲                                   │
 *       └──── lease lost (not extended in time, or another node holds it) ◀─┘
 *
 * As leader, each pass reads the nodes (dead: heartbeat older than nodeTtlMs by the store clock)
 * and the shard map, computes balanceShards (minimal movement), and writes it when it changed.
 * The write is fenced by the lease: it applies only if this node still holds it at this epoch.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { balanceShards } from '../core/shard.ts';
import type { LeaderLease, Store } from '../store/store.ts';

export interface ElectorOptions {
  intervalMs: number;
  leaseMs: number;
  nodeTtlMs: number;
  shardCount: number;
}

export interface ElectorPass {
  leader: boolean;
  epoch: number | null;
  /** Shards whose owner changed in this pass. */
  moved: number;
}

export class Elector {
  private lease: LeaderLease | null = null;
  private abort = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(
    private readonly deps: { store: Store; clock: Clock; nodeId: string; logger: Logger; onMoved?: (moved: number, epoch: number) => void },
    private readonly opts: ElectorOptions,
  ) {}

  get isLeader(): boolean {
    return this.lease !== null;
  }

  get epoch(): number | null {
    return this.lease?.epoch ?? null;
  }

  async runOnce(): Promise<ElectorPass> {
    const { store, nodeId, logger } = this.deps;
    let lease: LeaderLease | null;
    try {
      lease = await store.leaderAttemptElect({ nodeId, leaseMs: this.opts.leaseMs });
    } catch (err) {
      logger.warn({ err }, 'leader election failed');
      this.lease = null;
      return { leader: false, epoch: null, moved: 0 };
    }
    if (lease && (!this.lease || this.lease.epoch !== lease.epoch)) logger.info({ epoch: lease.epoch }, 'became leader');
    if (!lease && this.lease) logger.warn({ epoch: this.lease.epoch }, 'lost the leader lease');
    this.lease = lease;
    if (!lease) return { leader: false, epoch: null, moved: 0 };

    const [nodes, shards] = await Promise.all([store.nodeList(), store.shardList()]);
    const live = nodes.filter((n) => n.ageMs < this.opts.nodeTtlMs).map((n) => n.id);
    const current = new Map(shards.map((s) => [s.shard, s.nodeId]));
    const target = balanceShards(current, live, this.opts.shardCount);
    const moved = target.filter((n, shard) => n !== (current.get(shard) ?? null)).length;
    if (moved === 0) return { leader: true, epoch: lease.epoch, moved: 0 };
    const assignments = target.flatMap((n, shard) => (n === null ? [] : [{ shard, nodeId: n }]));
    const applied = await store.shardAssign({ leaderId: nodeId, epoch: lease.epoch, assignments });
    if (!applied) {
      this.lease = null;
      return { leader: false, epoch: null, moved: 0 };
    }
    logger.info({ epoch: lease.epoch, moved, live }, 'shards reassigned');
    this.deps.onMoved?.(moved, lease.epoch);
    return { leader: true, epoch: lease.epoch, moved };
  }

  start(): void {
    this.abort = new AbortController();
    this.loop = (async () => {
      for (;;) {
        await this.runOnce().catch((err) => this.deps.logger.error({ err }, 'elector pass failed'));
        try {
          await this.deps.clock.sleep(this.opts.intervalMs, this.abort.signal);
        } catch {
          return;
        }
      }
    })();
  }

  /** Stops, and gives the lease up at once so another node leads without waiting for expiry. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    if (this.lease) await this.deps.store.leaderResign({ nodeId: this.deps.nodeId, epoch: this.lease.epoch }).catch(() => {});
    this.lease = null;
  }
}
