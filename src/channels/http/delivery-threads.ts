/**
 * HTTP deliveries on threads of their own: the same HttpChannel, run by `threads` worker threads
 * (delivery-thread-worker.ts), each with its own undici pool. The event loop that keeps the
 * timer, the claims and the virtual queues no longer builds requests, signs them, writes sockets
 * or parses responses: while firing that was about half of its busy time (socket writev alone
 * 12–18 %, HMAC 3–5 %, undici and GC most of the rest; docs/architecture.md "Threads").
 *
 *   event loop: dispatcher ── deliver(event) ──▶ the deliveries of one tick, one message per thread
 *               outcome promise resolved ◀── the outcomes one thread settled in one tick, one message
 *
 * Each delivery goes to the thread with the fewest deliveries in flight, so one slow endpoint
 * fills no thread more than another. A thread keeps connectionsPerOrigin / threads sockets per
 * origin, so the node as a whole keeps the same bound as one HttpChannel.
 *
 * deliver() never throws and never hangs on a thread: a thread that exits settles its
 * deliveries in flight as retries ("delivery thread exited"), and a new thread takes its place.
 * The caller's AbortSignal works across the thread boundary: aborting it aborts its deliveries on
 * every thread. At most DELIVERIES_IN_FLIGHT_MAX deliveries wait for the threads at once; more are
 * answered at once with a retry (the dispatcher's own bounds keep far below it). The calls cross
 * by core/thread-rpc.ts; their protocol is DeliveryThreadProtocol.
 */
import type { Worker } from 'node:worker_threads';
import { workerThread, type BusyThread } from '../../core/thread-busy.ts';
import { RpcClient, startWorker } from '../../core/thread-rpc.ts';
import type { Channel, DeliveryOutcome, HttpDueEvent } from '../channel.ts';
import { CONNECTIONS_PER_ORIGIN_DEFAULT, type HttpChannelOptions } from './http-channel.ts';

export const DELIVERIES_IN_FLIGHT_MAX = 200_000;
export const DELIVERY_THREADS_MAX = 16;
const START_MS_MAX = 60_000;
/** Waits between attempts to replace a thread that died, while a new one fails to start. */
const RESPAWN_DELAY_MS_MIN = 100;
const RESPAWN_DELAY_MS_MAX = 30_000;

/** What crosses to a thread: the channel's options that are plain data. */
export type DeliveryThreadOptions = Pick<
  HttpChannelOptions,
  'connectionsPerOrigin' | 'responseBodyBytesMax' | 'userAgent'
> & {
  allowHosts?: readonly string[];
};

/** What a delivery thread (delivery-thread-worker.ts) answers. */
export type DeliveryThreadProtocol = {
  /** Builds the thread's HttpChannel; the first call. */
  start(options: DeliveryThreadOptions): void;
  /** Delivers `event` under the caller's signal known here as `signal`. */
  deliver(event: HttpDueEvent, signal: number): DeliveryOutcome;
  /** The caller's signal `signal` aborted: its deliveries on this thread are aborted. */
  abort(signal: number, reason: string): void;
  /** Closes the pool (deliveries in flight end or are aborted by their signal); the thread then exits. */
  close(): void;
};

interface Lane {
  worker: Worker;
  rpc: RpcClient<DeliveryThreadProtocol>;
}

/** Starts `threads` delivery threads; resolves once every one is ready. */
export async function openHttpThreadChannel(
  threads: number,
  opts: DeliveryThreadOptions = {},
): Promise<HttpThreadChannel> {
  if (!Number.isInteger(threads) || threads < 1 || threads > DELIVERY_THREADS_MAX) {
    throw new RangeError(`delivery threads must be an integer from 1 to ${DELIVERY_THREADS_MAX}, got ${threads}`);
  }
  const perThread = Math.max(1, Math.ceil((opts.connectionsPerOrigin ?? CONNECTIONS_PER_ORIGIN_DEFAULT) / threads));
  const options = { ...opts, allowHosts: [...(opts.allowHosts ?? [])], connectionsPerOrigin: perThread };
  const channel = new HttpThreadChannel(options);
  try {
    await Promise.all(Array.from({ length: threads }, () => channel.addLane()));
  } catch (err) {
    await channel.close();
    throw err;
  }
  return channel;
}

export class HttpThreadChannel implements Channel<HttpDueEvent> {
  private readonly lanes: Lane[] = [];
  private readonly signalIds = new WeakMap<AbortSignal, number>();
  private nextSignalId = 1;
  private inflight = 0;
  private closing: Promise<void> | null = null;

  constructor(private readonly options: DeliveryThreadOptions) {}

  /** Deliveries sent to the threads and not yet settled. */
  get inFlight(): number {
    return this.inflight;
  }

  get threads(): number {
    return this.lanes.length;
  }

  /** The delivery threads, for /metrics' busy time. */
  busyThreads(): BusyThread[] {
    return this.lanes.map((lane, i) => workerThread(`delivery-${i}`, lane.worker));
  }

  deliver(event: HttpDueEvent, signal: AbortSignal): Promise<DeliveryOutcome> {
    if (this.closing) return Promise.resolve({ kind: 'retry', reason: 'delivery threads closed', durationMs: 0 });
    if (signal.aborted) return Promise.resolve({ kind: 'retry', reason: 'aborted before sending', durationMs: 0 });
    if (this.inflight >= DELIVERIES_IN_FLIGHT_MAX) {
      return Promise.resolve({
        kind: 'retry',
        reason: `delivery threads: ${DELIVERIES_IN_FLIGHT_MAX} deliveries already in flight`,
        durationMs: 0,
      });
    }
    const lane = this.leastBusy();
    if (!lane) return Promise.resolve({ kind: 'retry', reason: 'no delivery thread running', durationMs: 0 });
    this.inflight++;
    return lane.rpc.call('deliver', event, this.signalId(signal)).then(
      (outcome) => {
        this.inflight--;
        return outcome;
      },
      // The thread exited with it (or the channel closed): retried later.
      (err: Error): DeliveryOutcome => {
        this.inflight--;
        return { kind: 'retry', reason: err.message, durationMs: 0 };
      },
    );
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all(
        this.lanes.map(async (lane) => {
          const exited = new Promise<void>((resolve) => lane.worker.once('exit', () => resolve()));
          lane.rpc.call('close').catch(() => {});
          // A thread closes its pool (in-flight deliveries end or are aborted by their signal) and exits.
          const timer = setTimeout(() => void lane.worker.terminate(), 10_000);
          await exited;
          clearTimeout(timer);
        }),
      );
    })();
    return this.closing;
  }

  /** Starts one thread; resolves once it is ready. Exported for openHttpThreadChannel. */
  async addLane(): Promise<void> {
    const worker = startWorker(new URL('./delivery-thread-worker.ts', import.meta.url));
    let starting = true;
    const lane: Lane = {
      worker,
      rpc: new RpcClient<DeliveryThreadProtocol>(worker, {
        // What the deliveries in flight on a thread that is gone are retried with.
        dead: (why) => {
          if ('closed' in why || this.closing) return new Error('delivery threads closed');
          if ('error' in why) return starting ? why.error : new Error(`delivery thread exited: ${why.error.message}`);
          return new Error(
            starting
              ? `delivery thread exited while starting (code ${why.exitCode})`
              : `delivery thread exited (code ${why.exitCode})`,
          );
        },
      }),
    };
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        lane.rpc.call('start', this.options),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`delivery thread did not start within ${START_MS_MAX} ms`)),
            START_MS_MAX,
          );
        }),
      ]);
    } catch (err) {
      await lane.rpc.terminate();
      throw err;
    } finally {
      clearTimeout(timer);
      starting = false;
    }
    if (this.closing) {
      // Closed while this thread was starting (a replacement): it takes no deliveries.
      await lane.rpc.terminate();
      return;
    }
    worker.on('exit', () => this.laneExited(lane));
    this.lanes.push(lane);
  }

  /** A thread exited: its deliveries in flight were settled as retries (RpcClient's dead thread); another takes its place. */
  private laneExited(lane: Lane): void {
    const at = this.lanes.indexOf(lane);
    if (at >= 0) this.lanes.splice(at, 1);
    // Deliveries go on: a thread that died is replaced (its deliveries above are retried later).
    this.replaceLane(RESPAWN_DELAY_MS_MIN);
  }

  /** Starts a thread in place of one that died; tries again, each time waiting longer, until one starts. */
  private replaceLane(delayMs: number): void {
    if (this.closing) return;
    this.addLane().catch(() => {
      const timer = setTimeout(() => this.replaceLane(Math.min(delayMs * 2, RESPAWN_DELAY_MS_MAX)), delayMs);
      timer.unref();
    });
  }

  private leastBusy(): Lane | undefined {
    let best = this.lanes[0];
    for (const lane of this.lanes) if (lane.rpc.inFlight < best.rpc.inFlight) best = lane;
    return best;
  }

  /** The id a signal has on the threads; its abort reaches every thread. */
  private signalId(signal: AbortSignal): number {
    let id = this.signalIds.get(signal);
    if (id === undefined) {
      const assigned = this.nextSignalId++;
      id = assigned;
      this.signalIds.set(signal, assigned);
      signal.addEventListener(
        'abort',
        () => {
          const reason = signal.reason instanceof Error ? signal.reason.message : 'aborted';
          // Sent after the deliveries made before it, in the same message when made in the same tick.
          for (const lane of this.lanes) lane.rpc.call('abort', assigned, reason).catch(() => {});
        },
        { once: true },
      );
    }
    return id;
  }
}
