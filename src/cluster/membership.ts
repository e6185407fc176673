/**
 * Membership: this node's heartbeat in the store, and its own view of whether it may still act.
 *
 *   heartbeat ok at (monotonic) t ──▶ alive until t + nodeTtlMs − safetyMs
 *   no successful heartbeat by then ──▶ not alive: stop firing (shards are about to move)
 *
 * The leader declares a node dead once its heartbeat is `nodeTtlMs` old by the store's clock.
 * `t` is taken when the heartbeat is *sent*, so however long the round trip, this node gives up
 * its shards before the leader may hand them to another node: a paused or partitioned node
 * stops firing before anyone else can own its shards. The claim's shard fence in the store is the
 * second line of defence.
 */
import { runEvery } from '../core/loop.ts';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { Store } from '../store/store.ts';

export interface MembershipOptions {
  heartbeatIntervalMs: number;
  /** A node whose heartbeat is this old (store clock) is dead. */
  nodeTtlMs: number;
  /** This node stops acting this long before its TTL would run out. */
  safetyMs: number;
}

/**
 * Heartbeats sent further apart than this many intervals break this node's reach of the store
 * (reachableForMs). It bounds the outage a leader could miss: another node silent for a whole
 * TTL would have to stay silent well over a second after the store came back.
 */
const REACH_GAP_INTERVALS_MAX = 3;

export const DEFAULT_MEMBERSHIP_OPTIONS: MembershipOptions = {
  heartbeatIntervalMs: 500,
  nodeTtlMs: 3_000,
  safetyMs: 750,
};

export class Membership {
  private aliveUntilMono = -Infinity;
  /** Send time of the first heartbeat of the current unbroken run of successes (Infinity: none). */
  private reachableSinceMono = Infinity;
  private lastOkSentMono = -Infinity;
  private abort = new AbortController();
  private loop: Promise<void> | null = null;
  readonly opts: MembershipOptions;

  constructor(
    private readonly deps: {
      store: Pick<Store, 'nodeHeartbeat' | 'nodeDelete'>;
      clock: Clock;
      /** The store-calibrated clock: the cluster time of the heartbeats (default: `clock`). */
      storeClock?: Pick<Clock, 'now'>;
      nodeId: string;
      logger: Logger;
      meta: Record<string, unknown>;
    },
    opts: Partial<MembershipOptions> = {},
  ) {
    this.opts = { ...DEFAULT_MEMBERSHIP_OPTIONS, ...opts };
  }

  /** True while the last successful heartbeat is recent enough for this node to act. */
  isAlive(): boolean {
    return this.deps.clock.monotonicMs() < this.aliveUntilMono;
  }

  /**
   * How long this node has reached the store without a break: every heartbeat since then
   * succeeded, each sent within REACH_GAP_INTERVALS_MAX intervals of the previous one. 0 after a
   * failed or late one. The leader rescues a silent node's claims only when it has itself
   * reached the store for a whole node TTL: the store was up all the while the other node was
   * silent, so that node had its chances to heartbeat (after a store restart, nobody did).
   */
  reachableForMs(): number {
    if (!Number.isFinite(this.reachableSinceMono) || !this.isAlive()) return 0;
    return this.deps.clock.monotonicMs() - this.reachableSinceMono;
  }

  /** One heartbeat; returns whether it reached the store. */
  async runOnce(): Promise<boolean> {
    const sentAt = this.deps.clock.monotonicMs();
    try {
      const now = (this.deps.storeClock ?? this.deps.clock).now();
      await this.deps.store.nodeHeartbeat({ nodeId: this.deps.nodeId, meta: this.deps.meta, now });
      this.aliveUntilMono = sentAt + this.opts.nodeTtlMs - this.opts.safetyMs;
      if (sentAt - this.lastOkSentMono > REACH_GAP_INTERVALS_MAX * this.opts.heartbeatIntervalMs)
        this.reachableSinceMono = sentAt;
      this.lastOkSentMono = sentAt;
      return true;
    } catch (err) {
      this.reachableSinceMono = Infinity;
      this.deps.logger.warn({ err }, 'heartbeat failed');
      return false;
    }
  }

  start(): void {
    this.abort = new AbortController();
    this.loop = runEvery(this.deps.clock, this.opts.heartbeatIntervalMs, this.abort.signal, () => this.runOnce());
  }

  /** Stops heart-beating and, when `leave`, removes this node from the store at once. */
  async stop(leave: boolean): Promise<void> {
    this.abort.abort();
    await this.loop;
    this.aliveUntilMono = -Infinity;
    this.reachableSinceMono = Infinity;
    if (leave) await this.deps.store.nodeDelete({ nodeId: this.deps.nodeId }).catch(() => {});
  }
}
