/**
 * One virtual queue per (tenant, destination): its own FIFO, concurrency limit, rate limit and
 * circuit breaker, so one slow or failing endpoint never holds up another (Centrifuge).
 *
 * Its claims are bounded (`claimedMax`): the scheduler claims an event of this queue only while
 * fewer than that many are claimed and not yet recorded, so a throttled, slow, failing or
 * circuit-broken queue holds at most that many events; the rest stay scheduled in the store,
 * unclaimed, and spend no attempt.
 *
 * pump(): while a slot is free and work waits:
 *   breaker open  → the head fails fast as a retry after the breaker's remaining open time
 *   half-open     → the head goes as the one probe
 *   rate limited  → wake up when the next token is due
 *   otherwise     → start a delivery
 *
 * While the circuit is open its owner claims nothing for it (admits: `none`), then one event for
 * the probe (`probe`, told by hooks.probeDue when the open time has passed): a failing endpoint's
 * events stay scheduled in the store, unclaimed, instead of being claimed to fail fast, retried and
 * claimed again (a claim and an outcome each, per event and per reopening, that the store's other
 * queues pay for). Those the circuit finds already claimed when it opens still fail fast.
 *
 * It tells its owner (`hooks.changed`) when its endpoint's state changes, at most once per change,
 * never per event: the circuit opened (closed → open after the breaker's consecutive failures) or
 * closed (a success while not closed); the endpoint started failing (its first retryable failure,
 * or the first since it recovered) or recovered (a success RECOVERED_AFTER_MS or more after its
 * last failure). While failing, failures change nothing, and recovering takes RECOVERED_AFTER_MS
 * without one, so a flapping endpoint under a flood makes at most one `failing` per
 * RECOVERED_AFTER_MS. Events failed fast while the circuit is open are not deliveries and count
 * for neither.
 */
import type { Clock } from '../core/clock.ts';
import type { DeliveryOutcome } from '../channels/channel.ts';
import { type CircuitAdmits, CircuitBreaker, type CircuitState } from './circuit-breaker.ts';
import { DeliveryStats, type DeliveryStatsView } from './delivery-stats.ts';
import type { DeliverySettings } from './destinations.ts';
import { TokenBucket } from '../core/token-bucket.ts';

export interface VirtualQueueHooks<T> {
  /** Starts one delivery; resolves with its outcome (never rejects). */
  deliver(item: T, settings: DeliverySettings, signal: AbortSignal): Promise<DeliveryOutcome>;
  /** Called once per item with its outcome, whether delivered or failed fast. */
  done(item: T, settings: DeliverySettings, outcome: DeliveryOutcome): void;
  /** The endpoint's state changed (see the file's comment): once per change; `item`'s delivery changed it. */
  changed?(change: QueueChange, item: T): void;
  /**
   * The circuit's open time has passed: it lets a probe through now (admits). While it was open
   * the owner claimed nothing for this queue; now it may claim the probe.
   */
  probeDue?(): void;
}

/** A channel's reason for an attempt that ran out of its destination's timeout (http: `timeout after 10000ms`). */
const TIMED_OUT = /timeout after \d+ms/;

/** How long after its last failure a success counts as the endpoint's recovery. */
export const RECOVERED_AFTER_MS = 30_000;

/**
 * What failed, as a log line may show it: the HTTP status, or whether it timed out. Never the
 * outcome's reason text, which may quote what the endpoint answered (an endpoint that echoes a
 * request's headers would put its credentials in the log); the event's trace keeps it.
 */
export interface FailureFacts {
  status?: number;
  timedOut: boolean;
}

/** A change of a queue's endpoint, told to its owner once. */
export type QueueChange =
  /** The breaker opened: `openMs` until it lets a probe through. */
  | ({ kind: 'circuit_opened'; openMs: number } & FailureFacts)
  | { kind: 'circuit_closed' }
  /** The first retryable failure, or the first since the endpoint recovered. */
  | ({ kind: 'failing' } & FailureFacts)
  /** A success RECOVERED_AFTER_MS or more after the last failure; `failures` since `failing`. */
  | { kind: 'recovered'; failures: number; failingMs: number };

/** Bounds on a queue's claimed-but-undelivered events (see claimedMaxOf). */
export const CLAIMED_MIN = 64;
export const CLAIMED_MAX = 2_000;
/** Claims per concurrency slot: enough to keep the slots busy across a claim's round trip. */
const CLAIMED_PER_SLOT = 25;
/** A rate-limited queue holds about this many seconds of its rate. */
const CLAIMED_RATE_SECONDS = 2;

/**
 * How many events a queue may hold claimed: enough to keep its concurrency busy between two
 * claims, no more than two seconds of its rate limit, within [CLAIMED_MIN, CLAIMED_MAX].
 */
export function claimedMaxOf(settings: Pick<DeliverySettings, 'maxConcurrency' | 'rateLimitPerSecond'>): number {
  let n = settings.maxConcurrency * CLAIMED_PER_SLOT;
  if (settings.rateLimitPerSecond !== null)
    n = Math.min(n, Math.ceil(settings.rateLimitPerSecond * CLAIMED_RATE_SECONDS));
  return Math.max(CLAIMED_MIN, Math.min(CLAIMED_MAX, n));
}

/** What the destination health read shows of a queue on this node. */
export interface QueueHealth extends DeliveryStatsView {
  circuit: CircuitState;
  /** Events handed to the queue and not started (rate limit, concurrency). */
  waiting: number;
  /** Deliveries started and not finished. */
  inFlight: number;
}

export class VirtualQueue<T> {
  private readonly items: T[] = [];
  private head = 0;
  private active = 0;
  private bucket: TokenBucket | null = null;
  private readonly breaker: CircuitBreaker;
  private readonly stats = new DeliveryStats();
  private wakeTimer: (() => void) | null = null;
  /** Armed while the circuit is open: tells hooks.probeDue when it lets a probe through. */
  private probeTimer: (() => void) | null = null;
  /** Since the `failing` change until `recovered`: when it began, the last failure (monotonic ms) and the count. */
  private failing: { sinceMs: number; lastMs: number; failures: number } | null = null;
  /**
   * Shared by every delivery started since the last abortInflight(): aborting it aborts them all,
   * without an AbortController (and a set entry) per delivery.
   */
  private abort = new AbortController();

  constructor(
    private settings: DeliverySettings,
    private readonly clock: Clock,
    private readonly hooks: VirtualQueueHooks<T>,
    /** Jitter source in [0, 1): the dispatcher's, so a seeded run stays reproducible. */
    private readonly random: () => number = Math.random,
  ) {
    this.breaker = new CircuitBreaker({}, clock);
    this.applySettings(settings);
  }

  /** Events waiting plus events being delivered. */
  get size(): number {
    return this.items.length - this.head + this.active;
  }

  get breakerState(): string {
    return this.breaker.state;
  }

  /** What the circuit lets through now: every event, one (the probe) or none (see the file's comment). */
  admits(): CircuitAdmits {
    return this.breaker.admits();
  }

  health(): QueueHealth {
    return {
      circuit: this.breaker.state,
      waiting: this.items.length - this.head,
      inFlight: this.active,
      ...this.stats.view(),
    };
  }

  /** Bound on this queue's claimed-but-undelivered events (claimedMaxOf its settings). */
  get claimedMax(): number {
    return claimedMaxOf(this.settings);
  }

  applySettings(settings: DeliverySettings): void {
    const rateChanged =
      settings.rateLimitPerSecond !== this.settings.rateLimitPerSecond ||
      (this.bucket === null) !== (settings.rateLimitPerSecond === null);
    this.settings = settings;
    if (rateChanged || (settings.rateLimitPerSecond !== null && !this.bucket)) {
      this.bucket =
        settings.rateLimitPerSecond !== null
          ? new TokenBucket({ perSecond: settings.rateLimitPerSecond }, this.clock)
          : null;
    }
    this.pump();
  }

  push(item: T): void {
    this.items.push(item);
    this.pump();
  }

  /** Removes and returns every item not yet started (shutdown). */
  takeWaiting(): T[] {
    const waiting = this.items.slice(this.head);
    this.items.length = 0;
    this.head = 0;
    this.wakeTimer?.();
    this.wakeTimer = null;
    this.probeTimer?.();
    this.probeTimer = null;
    return waiting;
  }

  /** Aborts every delivery in flight (shutdown deadline); deliveries started later get a fresh signal. */
  abortInflight(): void {
    const inflight = this.abort;
    this.abort = new AbortController();
    inflight.abort();
  }

  private shift(): T {
    const item = this.items[this.head++];
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items.splice(0, this.head);
      this.head = 0;
    }
    return item;
  }

  private pump(): void {
    while (this.active < this.settings.maxConcurrency && this.head < this.items.length) {
      if (this.breaker.state !== 'closed') {
        const gate = this.breaker.check();
        if (!gate.ok) {
          const item = this.shift();
          // Spread over [reopen, 2 × the time to reopen]: every event failed fast while the circuit
          // is open would otherwise come due in the same millisecond, a herd of claims and fast
          // failures that delays every other destination's events due then. (Holding them instead
          // until the circuit half-opens was tried: the other destination's worst lateness went from
          // 56–66 ms to 112–143 ms in test/slow/isolation.test.ts.) The queue's claim bound keeps
          // how many fail fast at once to claimedMax.
          const retryAfterMs = gate.retryInMs + Math.floor(this.random() * gate.retryInMs);
          this.hooks.done(item, this.settings, {
            kind: 'retry',
            reason: 'circuit open: endpoint failing',
            retryAfterMs,
            durationMs: 0,
          });
          continue;
        }
        // This caller holds the half-open probe: one request, sent now, outside the rate limit.
        this.start(this.shift());
        continue;
      }
      if (this.bucket) {
        const waitMs = this.bucket.take();
        if (waitMs > 0) {
          this.wakeIn(waitMs);
          return;
        }
      }
      this.start(this.shift());
    }
  }

  /** Pumps again in `waitMs` (one timer at a time: an earlier one stands). */
  private wakeIn(waitMs: number): void {
    if (this.wakeTimer) return;
    this.wakeTimer = this.clock.setTimer(waitMs, () => {
      this.wakeTimer = null;
      this.pump();
    });
  }

  /** Tells hooks.probeDue once the circuit, just opened, lets a probe through. */
  private armProbeTimer(): void {
    const now = this.breaker.admits();
    if (now.admits !== 'none') return;
    this.probeTimer?.();
    this.probeTimer = this.clock.setTimer(now.inMs, () => {
      this.probeTimer = null;
      this.hooks.probeDue?.();
    });
  }

  private start(item: T): void {
    this.active++;
    const settings = this.settings;
    this.hooks.deliver(item, settings, this.abort.signal).then(
      (outcome) => this.finish(item, settings, outcome),
      (err: unknown) =>
        this.finish(item, settings, { kind: 'retry', reason: `channel error: ${String(err)}`, durationMs: 0 }),
    );
  }

  private finish(item: T, settings: DeliverySettings, outcome: DeliveryOutcome): void {
    this.active--;
    this.stats.add(outcome);
    const circuitBefore = this.breaker.state;
    if (outcome.kind === 'retry') {
      this.breaker.onFailure();
      this.noteFailure(item, outcome, circuitBefore);
      if (circuitBefore !== 'open' && this.breaker.state === 'open') this.armProbeTimer();
    } else {
      this.breaker.onSuccess();
      this.noteSuccess(item, circuitBefore);
    }
    this.hooks.done(item, settings, outcome);
    this.pump();
  }

  private noteFailure(item: T, outcome: DeliveryOutcome & { kind: 'retry' }, circuitBefore: CircuitState): void {
    const nowMs = this.clock.monotonicMs();
    // Read only for a change: a failure that changes nothing costs a clock read and a count.
    const facts = (): FailureFacts => ({ status: outcome.status, timedOut: TIMED_OUT.test(outcome.reason) });
    if (this.failing === null) {
      this.failing = { sinceMs: nowMs, lastMs: nowMs, failures: 1 };
      this.hooks.changed?.({ kind: 'failing', ...facts() }, item);
    } else {
      this.failing.lastMs = nowMs;
      this.failing.failures++;
    }
    if (circuitBefore === 'closed' && this.breaker.state === 'open')
      this.hooks.changed?.({ kind: 'circuit_opened', openMs: this.breaker.openMs, ...facts() }, item);
  }

  private noteSuccess(item: T, circuitBefore: CircuitState): void {
    if (circuitBefore !== 'closed') this.hooks.changed?.({ kind: 'circuit_closed' }, item);
    if (this.failing === null) return;
    const nowMs = this.clock.monotonicMs();
    if (nowMs - this.failing.lastMs < RECOVERED_AFTER_MS) return;
    const { failures, sinceMs } = this.failing;
    this.failing = null;
    this.hooks.changed?.({ kind: 'recovered', failures, failingMs: Math.round(nowMs - sinceMs) }, item);
  }
}
