/**
 * The pull consumer: claims events of a pull destination and runs a handler per event type.
 *
 *   const c = belfry.consumer('jobs', { concurrency: 8, visibilityTimeout: '30s' });
 *   c.on('order.timeout', async (event, { signal }) => { ... });   // resolve: ack · throw: nack
 *   await c.start();
 *   ...
 *   await c.stop();   // stops claiming, lets the handlers in flight finish (and acks or nacks them)
 *
 *   claim (long poll, at most `concurrency - in flight` events; two claims at once, each for
 *          at most half the slots, so one is answered while the other's events run) ──▶ handler
 *        ├─ while it runs: extend when half the visibility timeout is left
 *        ├─ resolves ──▶ ack
 *        └─ throws   ──▶ nack (retried after the destination's backoff, or `retryAfter` of the error)
 *   Acks and nacks are sent in batches: the acks waiting when the next claim goes out ride in it
 *   (its `ack`); what is left after SETTLE_DELAY_MS goes in one POST /v1/events/settle. A handler's
 *   slot is free again once its ack or nack is queued.
 *   An extend answered 409 means the claim was lost (it expired): the handler's `signal` aborts
 *   and its result is not reported. A consumer that dies leaves its claims to expire: they come
 *   back after their visibility timeout, as failed attempts (at least once).
 *
 * Bounds: at most `concurrency` handlers at once (1 to 100); at most CLAIMS_IN_FLIGHT_MAX claim
 * requests in flight (one when `concurrency` is 1), whose `max` together never exceed the free
 * slots; a failed claim waits (doubling up to CLAIM_ERROR_BACKOFF_MS_MAX) before the next; at most
 * SETTLES_IN_FLIGHT_MAX settle requests at once, each of at most PULL_SETTLE_ITEMS_MAX acks and nacks,
 * and at most SETTLES_WAITING_MAX waiting (a handler that finds it full waits for room). An ack or
 * nack whose request failed is sent again (at least once; a repeat that finds the claim already
 * ended is not reported).
 */
import { BelfryApiError, type Transport } from './transport.ts';
import {
  ROUTES,
  type ClaimedEvent,
  type PullClaimResult,
  type PullExtended,
  type PullSettled,
  type PullSettleResult,
} from './routes.ts';
import { ERROR_STATUS, PULL_SETTLE_ITEMS_MAX } from './wire.ts';

export const CONSUMER_CONCURRENCY_DEFAULT = 10;
export const CONSUMER_CONCURRENCY_MAX = 100;
const CLAIM_MAX = 100;
/**
 * Claims in flight at once, at most. With one, the server and the handlers take turns (the server
 * claims while the handlers wait, the handlers run while the server waits); with two, each asks
 * for at most half the slots and the turns overlap.
 */
export const CLAIMS_IN_FLIGHT_MAX = 2;
const CLAIM_ERROR_BACKOFF_MS_MIN = 250;
const CLAIM_ERROR_BACKOFF_MS_MAX = 10_000;
/** How long a finished handler's ack or nack waits for a claim to ride in before it is sent alone. */
export const SETTLE_DELAY_MS = 2;
const SETTLES_IN_FLIGHT_MAX = 4;
/** Acks and nacks queued and not yet sent, at most: beyond it a finishing handler waits for room. */
const SETTLES_WAITING_MAX = 2_000;
const SETTLE_ERROR_BACKOFF_MS_MAX = 10_000;

/** A finished handler's ack or nack, waiting to be sent. */
interface Settle {
  event: ClaimedEvent;
  receipt: string;
  /** Absent for an ack. */
  nack?: { reason: string; discard?: true; retryAfter?: string | number };
  /** Sent before, in a request that failed: a conflict now may mean the first one applied. */
  again: boolean;
}

/** What a handler gets beside the event. */
export interface HandlerContext {
  /** Aborts when the claim is lost (its extension was refused): the event will be delivered again. */
  signal: AbortSignal;
}

export type EventHandler = (event: ClaimedEvent, ctx: HandlerContext) => Promise<void> | void;

/** Throw it (or an error with `retryAfter`) from a handler to choose when the event is tried again, or to discard it. */
export class NackError extends Error {
  override name = 'NackError';
  constructor(
    message: string,
    readonly opts: { retryAfter?: string | number; discard?: boolean } = {},
  ) {
    super(message);
  }
}

export interface ConsumerOptions {
  /** Handlers running at once, at most (default 10, 1 to 100). */
  concurrency?: number;
  /** How long a claimed event stays hidden from other consumers before it counts as failed (default '30s'); extended while its handler runs. */
  visibilityTimeout?: string | number;
  /** Claim only these types; default: the types with a handler, or any type once `on('*', ...)` is registered. */
  types?: string[];
  /** How long one claim waits for events to fall due (default '20s', at most '20s'). */
  wait?: string | number;
  /** Told of every failure the consumer does not throw: a claim, ack, nack or extend that failed, a handler that threw. */
  onError?: (err: unknown, event?: ClaimedEvent) => void;
}

type Phase = 'idle' | 'running' | 'stopping' | 'stopped';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/**
 * The visibility timeout in ms ("30s", "2m", 30000), read here so the consumer times its extends by
 * its own clock (never by comparing the server's `visibleUntil` with a clock that may be skewed).
 */
export function visibilityMsOf(value: string | number): number {
  const m = typeof value === 'number' ? null : /^(\d+)(ms|s|m|h)$/.exec(value.trim());
  const ms = typeof value === 'number' ? value : m ? Number(m[1]) * UNIT_MS[m[2]] : NaN;
  if (!Number.isInteger(ms) || ms < 1_000 || ms > 12 * 3_600_000)
    throw new RangeError(`visibilityTimeout must be from 1s to 12h ("30s", "5m" or ms), got ${JSON.stringify(value)}`);
  return ms;
}

export class Consumer {
  private readonly handlers = new Map<string, EventHandler>();
  private readonly inFlight = new Set<Promise<void>>();
  private phase: Phase = 'idle';
  private loop: Promise<void> | null = null;
  private readonly stopping = new AbortController();
  /** Resolve the claim lanes' waits for a free slot. */
  private slotWaiters: (() => void)[] = [];
  /** Slots promised to the claims in flight (their `max`). */
  private reserved = 0;
  private readonly concurrency: number;
  private readonly visibilityMs: number;
  /** Acks and nacks not yet sent. */
  private waiting: Settle[] = [];
  private settleTimer: ReturnType<typeof setTimeout> | null = null;
  private settlesInFlight = 0;
  private settleErrorBackoffMs = 0;
  /** Resolves handlers waiting for room in `waiting`, and stop() waiting for the last acks. */
  private settleProgress: (() => void)[] = [];

  constructor(
    private readonly t: Transport,
    readonly destination: string,
    private readonly opts: ConsumerOptions = {},
  ) {
    const c = opts.concurrency ?? CONSUMER_CONCURRENCY_DEFAULT;
    if (!Number.isInteger(c) || c < 1 || c > CONSUMER_CONCURRENCY_MAX)
      throw new RangeError(`concurrency must be an integer from 1 to ${CONSUMER_CONCURRENCY_MAX}`);
    this.concurrency = c;
    this.visibilityMs = visibilityMsOf(opts.visibilityTimeout ?? '30s');
  }

  /** Registers the handler of events of `type` (`'*'`: of every type without a handler of its own, untyped included). */
  on(type: string, handler: EventHandler): this {
    if (this.phase !== 'idle') throw new Error('register handlers before start()');
    this.handlers.set(type, handler);
    return this;
  }

  /** Handlers running now. */
  get running(): number {
    return this.inFlight.size;
  }

  /** Starts claiming; resolves once the claim loop runs. */
  async start(): Promise<void> {
    if (this.phase !== 'idle') throw new Error(`consumer already ${this.phase}`);
    if (this.handlers.size === 0) throw new Error('register a handler with on() before start()');
    this.phase = 'running';
    this.loop = this.claimLoop();
  }

  /** Stops claiming (a claim waiting for events is abandoned), waits for the handlers in flight to finish and report. */
  async stop(): Promise<void> {
    if (this.phase === 'idle') {
      this.phase = 'stopped';
      return;
    }
    if (this.phase === 'running') this.phase = 'stopping';
    this.stopping.abort();
    this.slotFreed();
    await this.loop;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    // The last acks and nacks go out now, each tried until it is answered or fails for good.
    while (this.waiting.length > 0 || this.settlesInFlight > 0) {
      this.flushSettles();
      await new Promise<void>((resolve) => this.settleProgress.push(resolve));
    }
    this.phase = 'stopped';
  }

  private claimTypes(): string[] | undefined {
    if (this.opts.types) return this.opts.types;
    if (this.handlers.has('*')) return undefined;
    return [...this.handlers.keys()];
  }

  private async claimLoop(): Promise<void> {
    const lanes = this.concurrency === 1 ? 1 : CLAIMS_IN_FLIGHT_MAX;
    const share = Math.ceil(this.concurrency / lanes);
    await Promise.all(Array.from({ length: lanes }, () => this.claimLane(share)));
  }

  /** One claim after another, each for at most `share` of the free slots. */
  private async claimLane(share: number): Promise<void> {
    let errorBackoffMs = CLAIM_ERROR_BACKOFF_MS_MIN;
    while (this.phase === 'running') {
      const free = this.concurrency - this.inFlight.size - this.reserved;
      if (free <= 0) {
        await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
        continue;
      }
      const max = Math.min(free, share, CLAIM_MAX);
      this.reserved += max;
      let events: ClaimedEvent[];
      // The acks waiting now ride in this claim (a claim carries acks, not nacks).
      const riding = this.takeWaiting((s) => s.nack === undefined);
      try {
        const res = await this.t.call<PullClaimResult>(ROUTES.pullClaim, {
          params: { name: this.destination },
          body: {
            ...(riding.length > 0 ? { ack: riding.map((s) => ({ id: s.event.id, receipt: s.receipt })) } : {}),
            max,
            visibilityTimeout: this.visibilityMs,
            wait: this.opts.wait ?? '20s',
            types: this.claimTypes(),
          },
          signal: this.stopping.signal,
        });
        events = res.body.events;
        if (riding.length > 0) this.settled(riding, res.body.settled ?? []);
        errorBackoffMs = CLAIM_ERROR_BACKOFF_MS_MIN;
      } catch (err) {
        // Its acks go again (in the next claim or a settle request): whether they applied is unknown.
        if (riding.length > 0) this.requeue(riding);
        if (this.phase !== 'running') return;
        this.opts.onError?.(err);
        await abortableSleep(errorBackoffMs, this.stopping.signal);
        errorBackoffMs = Math.min(errorBackoffMs * 2, CLAIM_ERROR_BACKOFF_MS_MAX);
        continue;
      } finally {
        this.reserved -= max;
      }
      // Events claimed as the consumer stopped are still run: they are this consumer's now.
      for (const event of events) this.track(this.handle(event));
      // Slots this claim held and did not fill are free for the other lane.
      if (events.length < max) this.slotFreed();
    }
  }

  /** Wakes the claim lanes waiting for a free slot. */
  private slotFreed(): void {
    const waiters = this.slotWaiters;
    this.slotWaiters = [];
    for (const w of waiters) w();
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => {
      this.inFlight.delete(p);
      this.slotFreed();
    });
  }

  private async handle(event: ClaimedEvent): Promise<void> {
    const handler = this.handlers.get(event.type ?? '') ?? this.handlers.get('*');
    const lost = new AbortController();
    const keeper = this.keepClaimed(event, lost);
    let failure: unknown = null;
    try {
      if (!handler) throw new NackError(`no handler for type ${JSON.stringify(event.type)}`);
      await handler(event, { signal: lost.signal });
    } catch (err) {
      failure = err ?? new Error('handler threw');
    } finally {
      keeper.stop();
    }
    if (lost.signal.aborted) return;
    while (this.waiting.length >= SETTLES_WAITING_MAX)
      await new Promise<void>((resolve) => this.settleProgress.push(resolve));
    if (failure === null) {
      this.queueSettle({ event, receipt: keeper.receipt, again: false });
      return;
    }
    this.opts.onError?.(failure, event);
    const nack = failure instanceof NackError ? failure.opts : {};
    const retryAfter = nack.discard ? undefined : (nack.retryAfter ?? retryAfterOf(failure));
    const reason = String((failure as Error).message ?? failure).slice(0, 1000);
    this.queueSettle({
      event,
      receipt: keeper.receipt,
      nack: { reason, ...(nack.discard ? { discard: true } : {}), ...(retryAfter === undefined ? {} : { retryAfter }) },
      again: false,
    });
  }

  private queueSettle(s: Settle): void {
    this.waiting.push(s);
    this.settleTimer ??= setTimeout(() => {
      this.settleTimer = null;
      this.flushSettles();
    }, SETTLE_DELAY_MS + this.settleErrorBackoffMs);
  }

  /** Takes the waiting acks and nacks that `pick` chooses, at most PULL_SETTLE_ITEMS_MAX, each event once. */
  private takeWaiting(pick: (s: Settle) => boolean): Settle[] {
    const taken: Settle[] = [];
    const kept: Settle[] = [];
    const ids = new Set<string>();
    for (const s of this.waiting) {
      if (taken.length < PULL_SETTLE_ITEMS_MAX && pick(s) && !ids.has(s.event.id)) {
        taken.push(s);
        ids.add(s.event.id);
      } else kept.push(s);
    }
    this.waiting = kept;
    if (taken.length > 0) this.progressed();
    return taken;
  }

  /** Sends what waits, in requests of at most PULL_SETTLE_ITEMS_MAX, at most SETTLES_IN_FLIGHT_MAX at once. */
  private flushSettles(): void {
    while (this.waiting.length > 0 && this.settlesInFlight < SETTLES_IN_FLIGHT_MAX) {
      const batch = this.takeWaiting(() => true);
      this.settlesInFlight++;
      void this.sendSettles(batch).finally(() => {
        this.settlesInFlight--;
        this.progressed();
        if (this.waiting.length > 0 && this.settleTimer === null) this.flushSettles();
      });
    }
  }

  private async sendSettles(batch: Settle[]): Promise<void> {
    const ack = batch.filter((s) => s.nack === undefined);
    const nack = batch.filter((s) => s.nack !== undefined);
    try {
      const res = await this.t.call<PullSettleResult>(ROUTES.pullSettle, {
        body: {
          ...(ack.length > 0 ? { ack: ack.map((s) => ({ id: s.event.id, receipt: s.receipt })) } : {}),
          ...(nack.length > 0 ? { nack: nack.map((s) => ({ id: s.event.id, receipt: s.receipt, ...s.nack })) } : {}),
        },
      });
      this.settleErrorBackoffMs = 0;
      this.settled([...ack, ...nack], res.body.results);
    } catch (err) {
      if (err instanceof BelfryApiError && err.status >= 400 && err.status < 500 && err.status !== 429) {
        // Refused as a whole (it will be again): reported, not retried.
        for (const s of batch) this.opts.onError?.(err, s.event);
        return;
      }
      this.opts.onError?.(err);
      this.settleErrorBackoffMs = Math.min(Math.max(2 * this.settleErrorBackoffMs, 100), SETTLE_ERROR_BACKOFF_MS_MAX);
      this.requeue(batch);
    }
  }

  /** Reports the items the API did not settle; a conflict of one sent again is not reported (its first try may have applied). */
  private settled(batch: Settle[], results: PullSettled[]): void {
    batch.forEach((s, i) => {
      const r = results[i];
      if (!r || r.status === 'settled') return;
      if (s.again && r.error?.code === 'conflict') return;
      // A conflict: the claim expired meanwhile; the event comes back by its retry policy.
      this.opts.onError?.(
        new BelfryApiError({
          status: ERROR_STATUS[r.error?.code ?? ''] ?? 400,
          code: r.error?.code ?? 'unknown',
          message: r.error?.message ?? `event "${s.event.id}" was not settled`,
          details: (r.error?.details ?? []) as never,
        }),
        s.event,
      );
    });
  }

  /**
   * Acks and nacks whose request failed: sent again. Once stopping, one more try only: stop()
   * must end, and an event not acked comes back after its visibility timeout (at least once).
   */
  private requeue(batch: Settle[]): void {
    for (const s of batch) {
      if (this.phase !== 'running' && s.again) {
        this.opts.onError?.(new Error(`event "${s.event.id}" was not acked or nacked before stop`), s.event);
        continue;
      }
      this.queueSettle({ ...s, again: true });
    }
  }

  private progressed(): void {
    const waiters = this.settleProgress;
    this.settleProgress = [];
    for (const w of waiters) w();
  }

  /**
   * Extends the claim each time half its visibility timeout has passed (by this process's clock,
   * counted from when the claim or the last extend was answered), until stopped; aborts `lost`
   * when the claim is gone.
   */
  private keepClaimed(event: ClaimedEvent, lost: AbortController): { receipt: string; stop(): void } {
    const timeoutMs = this.visibilityMs;
    let timer: NodeJS.Timeout | null = null;
    let stopped = false;
    const schedule = (afterMs: number) => {
      if (stopped) return;
      timer = setTimeout(extend, afterMs);
    };
    const extend = async () => {
      try {
        await this.t.call<PullExtended>(ROUTES.pullExtend, {
          params: { id: event.id },
          body: { receipt: event.receipt, visibilityTimeout: timeoutMs },
        });
        schedule(timeoutMs / 2);
      } catch (err) {
        if (err instanceof BelfryApiError && err.status === 409) {
          lost.abort(err);
          return;
        }
        this.opts.onError?.(err, event);
        schedule(timeoutMs / 4);
      }
    };
    schedule(timeoutMs / 2);
    return {
      receipt: event.receipt,
      stop: () => {
        stopped = true;
        if (timer) clearTimeout(timer);
      },
    };
  }
}

function retryAfterOf(err: unknown): string | number | undefined {
  const value = (err as { retryAfter?: unknown } | null)?.retryAfter;
  return typeof value === 'string' || typeof value === 'number' ? value : undefined;
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
