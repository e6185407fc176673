/**
 * The nodes of a run: started as node.ts starts them, killed, paused and stopped by faults,
 * restarted (under the same id or a new one) after a kill, and all brought back for the drain.
 */
import type { Metrics } from '../../src/node/metrics.ts';
import type { Store } from '../../src/store/store.ts';
import type { Belfry } from './belfry.ts';
import type { History } from './history.ts';
import type { Remote } from './remote.ts';
import { NODE_SETTINGS, SimNode } from './sim-node.ts';
import type { Database } from './database.ts';
import type { StoreObserver, WakeupHub } from './store-link.ts';
import type { Prng, World } from './world.ts';

/** What every part of a run shares. */
export interface RunContext {
  belfry: Belfry;
  world: World;
  history: History;
  remote: Remote;
  /** One line of the run's trace. */
  trace(line: string): void;
  /** A fault struck: counted by kind and traced. */
  strike(kind: string, line: string): void;
}

/** What a fault at a chosen point did to the node it struck. */
export type PointHit = 'none' | 'killed' | 'paused';

export class SimCluster {
  /** The node in each slot (the latest run of it). */
  readonly nodes: SimNode[] = [];
  /** Set when the drain begins: nothing is killed or restarted any more. */
  inDrain = false;
  /** A fault may strike a node between claim and send, and between an answer and its record. */
  pointFault: (node: SimNode, where: string) => PointHit = () => 'none';
  private generation = 0;
  private names: number;

  constructor(
    private readonly ctx: RunContext,
    private readonly rand: Prng,
    private readonly deps: { real: Store; observer: StoreObserver; metrics: Metrics; hub: WakeupHub; db: Database },
    count: number,
  ) {
    this.names = count;
    ctx.remote.onAnswer = (label) => {
      const node = this.nodes.find((n) => n.label === label);
      return node ? this.pointFault(node, 'between send and record') : 'none';
    };
  }

  /** Starts the first run of each node. */
  startAll(count: number): void {
    for (let i = 0; i < count; i++) this.start(i, `n${i + 1}`);
  }

  /** A new run of the node in `slot`, started in the background (a start that fails is a process that exits). */
  start(slot: number, nodeId: string): SimNode {
    const { ctx, deps } = this;
    const label = `${nodeId}.${this.generation++}`;
    const node = new SimNode(
      label,
      nodeId,
      ctx.belfry,
      ctx.world,
      this.rand,
      deps.real,
      ctx.remote,
      deps.observer,
      deps.metrics,
      this.rand.int(-1_500, 1_500),
      NODE_SETTINGS,
      deps.hub,
      deps.db,
    );
    node.hooks.afterClaim = (n) => this.pointFault(n, 'between claim and send');
    this.nodes[slot] = node;
    ctx.trace(`${label} starts (skew ${node.clock.skewMs} ms)`);
    node.start().then(
      () => ctx.trace(`${label} started`),
      (err: unknown) => {
        ctx.trace(`${label} start failed: ${(err as Error).message}; the process exits`);
        if (node.alive) this.kill(node, 'start failed', false);
      },
    );
    return node;
  }

  /** Nodes that are up, started and not stopping: what a fault picks from. */
  upNodes(): SimNode[] {
    return this.nodes.filter((n) => n.alive && n.actor.state === 'up' && n.started && !n.stopping);
  }

  /** A node whose API serves a client (a paused one answers late; a dead or stopping one does not serve). */
  apiNode(rand: Prng): SimNode | null {
    const up = this.nodes.filter((n) => n.alive && n.started && !n.stopping);
    return up.length === 0 ? null : rand.pick(up);
  }

  private restartLater(slot: number, oldId: string, afterMs: number): void {
    this.ctx.world.timer(null, afterMs, () => {
      if (this.nodes[slot].alive || this.inDrain) return;
      const sameId = this.rand.chance(0.5);
      this.start(slot, sameId ? oldId : `n${++this.names}`);
    });
  }

  kill(node: SimNode, why: string, count = true): void {
    if (!node.alive) return;
    if (count) this.ctx.strike('kill', `${node.label} killed (${why})`);
    node.kill();
    this.ctx.history.killed(node.label);
    this.restartLater(this.nodes.indexOf(node), node.nodeId, this.rand.int(500, 15_000));
  }

  pause(node: SimNode, ms: number, why: string): void {
    const { world, history, trace } = this.ctx;
    this.ctx.strike('pause', `${node.label} paused for ${ms} ms (${why})`);
    node.actor.state = 'paused';
    const token = history.faulted(node.label, 'its node was paused', true);
    world.timer(null, ms, () => {
      history.up(node.label, token);
      if (node.actor.state !== 'paused') return; // resumed by the drain, or dead
      trace(`${node.label} resumes`);
      world.resume(node.actor);
    });
  }

  /** A graceful stop (restarted later); one that hangs 30 s is ended by a kill, as a supervisor would. */
  stop(node: SimNode, restartAfterMs: () => number): void {
    const { world, history, trace } = this.ctx;
    this.ctx.strike('stop', `${node.label} stops gracefully`);
    const slot = this.nodes.indexOf(node);
    node.stop().then(() => {
      if (!node.alive) return;
      trace(`${node.label} stopped`);
      node.kill();
      history.killed(node.label);
      this.restartLater(slot, node.nodeId, restartAfterMs());
    });
    world.timer(null, 30_000, () => {
      if (node.alive) this.kill(node, 'its graceful stop hung for 30 s');
    });
  }

  /** The drain: every link healed, every paused node resumed, every dead one restarted. */
  heal(): void {
    this.inDrain = true;
    for (const [slot, n] of this.nodes.entries()) {
      n.link.heal();
      n.link.slowMs = 0;
      n.link.errorRate = 0;
      n.link.busyRate = 0;
      n.link.lostReplyRate = 0;
      if (n.actor.state === 'paused') this.ctx.world.resume(n.actor);
      if (!n.alive) this.start(slot, n.nodeId);
    }
  }

  /** During the drain: a node that stopped meanwhile (its graceful stop ran on) comes back. */
  restartDead(): void {
    for (const [slot, n] of this.nodes.entries()) if (!n.alive) this.start(slot, n.nodeId);
  }
}
