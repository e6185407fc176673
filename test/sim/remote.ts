/**
 * The remote parties: each destination answers every attempt as the seed decides (delivered, a
 * failure, a refusal, or no answer at all while it hangs), after a latency. A node reaches them
 * through a Channel of its own, which does what a real channel does around the remote: it gives up
 * at the destination's timeout and at its abort signal. The answer travels back to the node (held
 * while it is paused, lost if it died).
 */
import type { Channel, DeliveryOutcome, DueEvent } from '../../src/channels/channel.ts';
import type { AttemptRec, History, RemoteResult } from './history.ts';
import type { Actor, Prng, World } from './world.ts';

export interface DestinationBehaviour {
  name: string;
  maxConcurrency: number;
  /** Of the attempts it answers: delivered, failed (5xx), refused (4xx); the rest of 1 is delivered. */
  failRate: number;
  discardRate: number;
  latencyMs: [number, number];
  /** Until this monotonic instant it answers nothing (a destination that hangs). */
  hangUntilMs: number;
}

/** The URL of a simulated destination (its name is its host). */
export function destinationUrl(name: string): string {
  return `http://${name}.sim.invalid/hook`;
}

function nameOf(url: string): string {
  return new URL(url).hostname.split('.')[0];
}

export class Remote {
  /** A fault may strike a node when an answer reaches it, before it records it: 'killed' or 'paused' there. */
  onAnswer: ((node: string) => 'none' | 'killed' | 'paused') | null = null;
  readonly destinations = new Map<string, DestinationBehaviour>();
  /** Once set, every destination delivers (the drain at the end of a run). */
  healthy = false;

  constructor(
    private readonly world: World,
    private readonly rand: Prng,
    private readonly history: History,
  ) {}

  add(d: DestinationBehaviour): void {
    this.destinations.set(d.name, d);
  }

  private decide(d: DestinationBehaviour): RemoteResult {
    if (this.healthy) return 'delivered';
    if (this.world.mono < d.hangUntilMs) return 'hang';
    const r = this.rand.next();
    if (r < d.failRate) return 'failed';
    if (r < d.failRate + d.discardRate) return 'discard';
    return 'delivered';
  }

  channelFor(actor: Actor, node: string): Channel {
    return {
      deliver: (due, signal) => this.deliver(actor, node, due, signal),
      close: async () => {},
    };
  }

  private deliver(actor: Actor, node: string, due: DueEvent, signal: AbortSignal): Promise<DeliveryOutcome> {
    // A dead process sends nothing.
    if (actor.state === 'dead') return new Promise(() => {});
    if (due.kind !== 'http') throw new Error(`the simulation delivers webhooks only, not ${due.kind}`);
    const d = this.destinations.get(nameOf(due.target));
    if (!d) throw new Error(`no simulated destination for ${due.target}`);
    const remote = this.decide(d);
    const a = this.history.attemptStart(node, due, d.name, remote);
    const inFlight = this.history.inFlight(node, d.name);
    if (inFlight > d.maxConcurrency)
      this.history.violate(
        'bounds',
        `${node} has ${inFlight} attempts in flight to ${d.name}, more than its maxConcurrency ${d.maxConcurrency}`,
      );
    const [lo, hi] = this.healthy ? [1, 5] : d.latencyMs;
    const latencyMs = remote === 'hang' ? Infinity : this.rand.int(lo, hi);
    return new Promise((resolve) => {
      let cancel = () => {};
      let done = false;
      const finish = (outcome: DeliveryOutcome, heard: NonNullable<AttemptRec['heard']>) => {
        if (done) return;
        done = true;
        cancel();
        signal.removeEventListener('abort', onAbort);
        // Between the send and the record: the node may die or stop here, with the answer in hand.
        const hit = heard === 'aborted' ? 'none' : (this.onAnswer?.(node) ?? 'none');
        if (hit === 'killed') return;
        this.world.timer(actor, 0, () => {
          this.history.attemptEnd(a, heard);
          resolve(outcome);
        });
      };
      const onAbort = () => finish({ kind: 'retry', reason: 'aborted', durationMs: 0 }, 'aborted');
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      const waitMs = Math.min(latencyMs, due.timeoutMs);
      cancel = this.world.timer(actor, waitMs, () => {
        if (latencyMs > due.timeoutMs)
          return finish(
            { kind: 'retry', reason: `timed out after ${due.timeoutMs} ms`, durationMs: waitMs },
            'timeout',
          );
        if (remote === 'delivered') finish({ kind: 'delivered', status: 200, durationMs: waitMs }, 'delivered');
        else if (remote === 'discard')
          finish({ kind: 'discard', reason: 'HTTP 410', status: 410, durationMs: waitMs }, 'discard');
        else finish({ kind: 'retry', reason: 'HTTP 503', status: 503, durationMs: waitMs }, 'failed');
      });
    });
  }
}
