/**
 * The pull consumer: claims events of a pull destination and runs a handler per event type.
 *
 *   const c = belfry.consumer('jobs', { concurrency: 8, visibilityTimeout: '30s' });
 *   c.on('order.timeout', async (event, { signal }) => { ... });   // resolve: ack · throw: nack
 *   await c.start();
 *   ...
 *   await c.stop();   // stops claiming, lets the handlers in flight finish (and acks or nacks them)
 *
 *   claim (long poll, at most `concurrency - in flight` events) ──▶ handler
 *        ├─ while it runs: extend when half the visibility timeout is left
 *        ├─ resolves ──▶ ack
 *        └─ throws   ──▶ nack (retried after the destination's backoff, or `retryAfter` of the error)
 *   An extend answered 409 means the claim was lost (it expired): the handler's `signal` aborts
 *   and its result is not reported. A consumer that dies leaves its claims to expire: they come
 *   back after their visibility timeout, as failed attempts (at least once).
 *
 * Bounds: at most `concurrency` handlers at once (1 to 100); one claim request in flight; a
 * failed claim waits (doubling up to CLAIM_ERROR_BACKOFF_MS_MAX) before the next.
 */
import { BelfryApiError, type Transport } from './transport.ts';
import { ROUTES, type ClaimedEvent, type PullClaimResult, type PullExtended } from './routes.ts';

export const CONSUMER_CONCURRENCY_DEFAULT = 10;
export const CONSUMER_CONCURRENCY_MAX = 100;
const CLAIM_MAX = 100;
const CLAIM_ERROR_BACKOFF_MS_MIN = 250;
const CLAIM_ERROR_BACKOFF_MS_MAX = 10_000;

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
  /** Resolves the claim loop's wait for a free slot. */
  private slotFreed: (() => void) | null = null;
  private readonly concurrency: number;
  private readonly visibilityMs: number;

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
    this.slotFreed?.();
    await this.loop;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    this.phase = 'stopped';
  }

  private claimTypes(): string[] | undefined {
    if (this.opts.types) return this.opts.types;
    if (this.handlers.has('*')) return undefined;
    return [...this.handlers.keys()];
  }

  private async claimLoop(): Promise<void> {
    let errorBackoffMs = CLAIM_ERROR_BACKOFF_MS_MIN;
    while (this.phase === 'running') {
      const free = this.concurrency - this.inFlight.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => (this.slotFreed = resolve));
        this.slotFreed = null;
        continue;
      }
      let events: ClaimedEvent[];
      try {
        const res = await this.t.call<PullClaimResult>(ROUTES.pullClaim, {
          params: { name: this.destination },
          body: {
            max: Math.min(free, CLAIM_MAX),
            visibilityTimeout: this.visibilityMs,
            wait: this.opts.wait ?? '20s',
            types: this.claimTypes(),
          },
          signal: this.stopping.signal,
        });
        events = res.body.events;
        errorBackoffMs = CLAIM_ERROR_BACKOFF_MS_MIN;
      } catch (err) {
        if (this.phase !== 'running') return;
        this.opts.onError?.(err);
        await abortableSleep(errorBackoffMs, this.stopping.signal);
        errorBackoffMs = Math.min(errorBackoffMs * 2, CLAIM_ERROR_BACKOFF_MS_MAX);
        continue;
      }
      // Events claimed as the consumer stopped are still run: they are this consumer's now.
      for (const event of events) this.track(this.handle(event));
    }
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => {
      this.inFlight.delete(p);
      this.slotFreed?.();
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
    try {
      if (failure === null) {
        await this.t.call(ROUTES.pullAck, { params: { id: event.id }, body: { receipt: keeper.receipt } });
        return;
      }
      this.opts.onError?.(failure, event);
      const nack = failure instanceof NackError ? failure.opts : {};
      const retryAfter = nack.discard ? undefined : (nack.retryAfter ?? retryAfterOf(failure));
      const reason = String((failure as Error).message ?? failure).slice(0, 1000);
      await this.t.call(ROUTES.pullNack, {
        params: { id: event.id },
        body: {
          receipt: keeper.receipt,
          reason,
          ...(nack.discard ? { discard: true } : {}),
          ...(retryAfter === undefined ? {} : { retryAfter }),
        },
      });
    } catch (err) {
      // A 409 here: the claim expired meanwhile; the event comes back by its retry policy.
      this.opts.onError?.(err, event);
    }
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
