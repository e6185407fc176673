/**
 * One lifecycle for the parts of a node that run: each is a Service, listed once with the phase
 * of the shutdown it stops in. A node starts its services in the order it lists them and stops
 * them phase by phase (STOP_PHASES), each phase in the reverse of its services' start order.
 *
 *   start: store ─▶ delivery ─▶ API listening ─▶ cluster ─▶ firing ─▶ maintenance ─▶ intake
 *   stop:  requests ─▶ intake ─▶ cluster ─▶ firing ─▶ maintenance ─▶ delivery ─▶ storage
 *
 * The API starts early and stops first: a node that cannot listen fires nothing, and a node
 * going down stops taking requests before anything else. A start that fails stops what it had
 * started, in the same order, and then fails.
 */

/** When a service stops, relative to the others (in this order). */
export const STOP_PHASES = [
  /** Stop taking requests; those in flight finish. */
  'requests',
  /** Stop taking work from elsewhere (broker sources, bulk jobs). */
  'intake',
  /** Stop firing for the cluster and leave it, so other nodes take the shards over at once. */
  'cluster',
  /** Stop making and claiming events. */
  'firing',
  /** Stop the background loops. */
  'maintenance',
  /** Let deliveries in flight finish until the deadline, then close the channels. */
  'delivery',
  /** Close the store, last. */
  'storage',
] as const;
export type StopPhase = (typeof STOP_PHASES)[number];

/** A part of a node that runs. */
export interface Service {
  /** For the log. */
  readonly name: string;
  /** Starts it (absent: it runs from the moment it is made, as an opened store does). */
  start?(): void | Promise<void>;
  /**
   * Stops it and settles when it has stopped. `deadlineMonoMs`: the shutdown's deadline on the
   * node's monotonic clock, for a service that waits for work in flight.
   */
  stop(deadlineMonoMs: number): void | Promise<void>;
}

/** The node's services, started in the order given and stopped by phase. */
export class Lifecycle {
  private readonly started: { service: Service; phase: StopPhase }[] = [];
  private stopping: Promise<void> | null = null;

  constructor(private readonly onStopFailed: (name: string, err: unknown) => void) {}

  /** Starts `service` (when it has a start) and lists it to stop in `phase`; returns it. */
  async start<S extends Service>(service: S, phase: StopPhase): Promise<S> {
    if (this.stopping) throw new Error(`cannot start ${service.name}: the node is stopping`);
    await service.start?.();
    this.started.push({ service, phase });
    return service;
  }

  /** Names of the started services in the order they stop. */
  stopOrder(): string[] {
    return this.ordered().map((s) => s.name);
  }

  /**
   * Stops every started service, phase by phase, each phase newest first. A service whose stop
   * fails is reported and the others still stop. Safe to call twice: both calls settle together.
   */
  stop(deadlineMonoMs: number): Promise<void> {
    this.stopping ??= (async () => {
      for (const service of this.ordered()) {
        try {
          await service.stop(deadlineMonoMs);
        } catch (err) {
          this.onStopFailed(service.name, err);
        }
      }
    })();
    return this.stopping;
  }

  private ordered(): Service[] {
    return STOP_PHASES.flatMap((phase) =>
      this.started
        .filter((s) => s.phase === phase)
        .reverse()
        .map((s) => s.service),
    );
  }
}

/** A service of a loop that has `start()` and `stop()` methods of its own. */
export function loopService(name: string, loop: { start(): void; stop(): unknown }): Service {
  return { name, start: () => loop.start(), stop: async () => void (await loop.stop()) };
}
