/**
 * Pull delivery's service (docs/pull.md): what the claim, ack, nack and extend routes do once
 * their request is parsed. A consumer claims due events of a pull destination, then acks, nacks
 * or extends each under the claim's receipt.
 *
 *   claim   ──▶ scheduled/awaiting_retry → executing (lease = visibility timeout, receipt)
 *   ack     ──▶ succeeded
 *   nack    ──▶ awaiting_retry | discarded | archived (retry policy, settle.ts)
 *   extend  ──▶ the lease moves on
 *   (no answer in time: the expirer, expirer.ts, ends the claim as a failed attempt)
 *
 * Every change is a conditional write in the store (on the receipt), so any node answers any of
 * them, two claims never hand out one event, and a stale or foreign receipt gets a conflict and
 * changes nothing. A claim that finds nothing due waits up to `waitMs` (PullWaiters: bounded per
 * tenant and node) and reads one bounded index page per look.
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from '../core/clock.ts';
import { isPull, type DestinationConfig } from '../core/destination.ts';
import { BelfryError } from '../core/errors.ts';
import type { EventRecord } from '../core/event.ts';
import type { Metrics } from '../core/metrics.ts';
import { queueOf } from '../core/queue.ts';
import type { EventPullClaimParams, EventPullSettleParams, Store } from '../store/store.ts';
import { decidePull, pullPolicy, type PullEnd } from './settle.ts';
import type { PullWaiters } from './waiters.ts';
import type { EventSink } from '../core/event-sink.ts';

export interface PullServiceDeps {
  store: Pick<
    Store,
    | 'eventGet'
    | 'eventPullClaim'
    | 'eventPullNextDue'
    | 'eventPullSettle'
    | 'eventPullSettleMany'
    | 'eventPullSettleThenClaim'
    | 'eventPullExtend'
  >;
  /** Where destinations are read (a cache of the store's). */
  destinations: Pick<Store, 'destinationGet'>;
  clock: Clock;
  /** The clock of visibility timeouts (see AppDeps.leaseClock). Default: `clock`. */
  leaseClock?: Clock;
  metrics: Pick<Metrics, 'pullClaimed' | 'pullEnded' | 'pullParked'>;
  waiters: PullWaiters;
  /** Told after each ack or nack that applied (the group's next event may go; waiters wake). */
  events: Pick<EventSink, 'pullSettled'>;
}

export interface PullClaimRequest {
  tenantId: string;
  /** The pull destination's name. */
  name: string;
  types: string[] | null;
  max: number;
  visibleMs: number;
  /** How long to wait for due events when none is (0: answer at once). */
  waitMs: number;
  /** Aborts when the client went away: nothing more is claimed for it. */
  gone: AbortSignal;
  /** Acks of earlier claims, settled (settleMany) once the destination is known, before looking for events. */
  acks?: PullSettleItem[];
}

/** One claim end of a batch (PullService.settleMany). */
export interface PullSettleItem {
  id: string;
  receipt: string;
  end: Exclude<PullEnd, { action: 'expire' }>;
}

/** Settles made ready for the store (PullService.prepareSettles): `at[k]` is the item of `settles[k]`. */
interface PreparedSettles {
  settles: EventPullSettleParams[];
  at: number[];
  results: (PullSettleResult | null)[];
}

/** What became of one item of a batch: the event after it, or the error that left it unchanged. */
export type PullSettleResult = { id: string; event: EventRecord } | { id: string; error: BelfryError };

function receiptConflict(id: string): BelfryError {
  return new BelfryError(
    'conflict',
    `the receipt does not hold a current claim of event "${id}" (its visibility timeout ended, it was already acked or nacked, it is from an older claim, or the event is not this tenant's)`,
    [{ field: 'receipt', message: 'not the current claim' }],
  );
}

export class PullService {
  constructor(private readonly deps: PullServiceDeps) {}

  private leaseNow(): number {
    return (this.deps.leaseClock ?? this.deps.clock).now();
  }

  /** The pull destination `name`, or a not_found / conflict that says why there is none. */
  async destination(tenantId: string, name: string): Promise<DestinationConfig> {
    const d = await this.deps.destinations.destinationGet({ tenantId, name });
    if (!d)
      throw new BelfryError('not_found', `no destination named "${name}"`, [{ field: 'name', message: 'not found' }]);
    if (!isPull(d.config)) {
      throw new BelfryError(
        'conflict',
        `destination "${name}" is a ${d.config.kind} destination: its events are pushed; only a pull destination ({"kind": "pull"}) can be claimed from`,
        [{ field: 'name', message: 'not a pull destination' }],
      );
    }
    return d.config;
  }

  /**
   * Claims up to `max` due events (waiting up to `waitMs` for some); every one under the same
   * receipt. The request's acks are settled first (`settled`, in their order), once the
   * destination is known (a claim that cannot be made settles nothing either), in the same store
   * write as the first look for events.
   */
  async claim(
    req: PullClaimRequest,
  ): Promise<{ events: EventRecord[]; receipt: string; settled?: PullSettleResult[] }> {
    const { deps } = this;
    const { tenantId, name, types, max, visibleMs, waitMs, gone, acks } = req;
    await this.destination(tenantId, name);
    const queue = queueOf({ name });
    let settled: PullSettleResult[] | undefined;
    // The acks not yet settled: they go with the first look.
    let unsettled = acks && acks.length > 0 ? acks : null;
    // Parked for the whole long poll (not only while asleep), so a write between two looks wakes it.
    const watch = waitMs > 0 ? deps.waiters.enter(tenantId, queue) : null;
    deps.metrics.pullParked.set(deps.waiters.parkedCount);
    try {
      const deadlineMs = deps.clock.monotonicMs() + waitMs;
      for (;;) {
        // A client that went away gets nothing claimed for it (its events would wait out the timeout).
        if (gone.aborted) {
          // Its acks still apply: the consumer sent them, whether or not it hears the answer.
          if (unsettled !== null) settled = await this.settleMany(tenantId, unsettled);
          return { events: [], receipt: '', settled };
        }
        const now = deps.clock.now();
        const receipt = randomBytes(16).toString('base64url');
        const leaseUntil = this.leaseNow() + visibleMs;
        const claim = { tenantId, queue, types, max, now, leaseUntil, receipt };
        let events: EventRecord[];
        if (unsettled === null) events = await deps.store.eventPullClaim(claim);
        else {
          ({ settled, events } = await this.settleThenClaim(tenantId, unsettled, claim));
          unsettled = null;
        }
        const leftMs = deadlineMs - deps.clock.monotonicMs();
        if (events.length > 0 || watch === null || leftMs <= 0 || gone.aborted || deps.waiters.isClosed) {
          deps.metrics.pullClaimed.inc(events.length);
          return { events, receipt, settled };
        }
        // Sleep until the queue's next event is due (when it is not already: then what is due is
        // another type's or a group's later event), a wake-up, or the fallback poll.
        const next = await deps.store.eventPullNextDue({ tenantId, queue });
        const untilNextMs = next === null || next <= now ? Infinity : next - now;
        await watch.sleep(Math.min(untilNextMs, leftMs), gone);
      }
    } finally {
      watch?.release();
      deps.metrics.pullParked.set(deps.waiters.parkedCount);
    }
  }

  /** Ends a claim (ack or nack) as its retry policy says; a conflict unless `receipt` holds it. */
  async settle(tenantId: string, id: string, receipt: string, end: PullEnd): Promise<EventRecord> {
    const [result] = await this.settleMany(tenantId, [{ id, receipt, end: end as PullSettleItem['end'] }]);
    if ('error' in result) throw result.error;
    return result.event;
  }

  /**
   * Ends many claims (acks and nacks) in one store write, each as `settle` would; the results in
   * the order given. An ack needs nothing read first (the receipt alone says whether it holds); a
   * nack reads its event and destination, as its retry policy decides what follows. The caller
   * names each event once.
   */
  async settleMany(tenantId: string, items: PullSettleItem[]): Promise<PullSettleResult[]> {
    const pending = await this.prepareSettles(tenantId, items);
    const { settles } = pending;
    if (settles.length === 0) return this.applySettles(items, pending, []);
    // One alone takes the single-event statement (PostgreSQL plans it as a primary-key update).
    const afters =
      settles.length === 1
        ? [await this.deps.store.eventPullSettle(settles[0])]
        : await this.deps.store.eventPullSettleMany({ settles });
    return this.applySettles(items, pending, afters);
  }

  /** settleMany's settles, then a claim, in one store write (eventPullSettleThenClaim). */
  private async settleThenClaim(
    tenantId: string,
    items: PullSettleItem[],
    claim: EventPullClaimParams,
  ): Promise<{ settled: PullSettleResult[]; events: EventRecord[] }> {
    const pending = await this.prepareSettles(tenantId, items);
    if (pending.settles.length === 0)
      return { settled: this.applySettles(items, pending, []), events: await this.deps.store.eventPullClaim(claim) };
    const both = await this.deps.store.eventPullSettleThenClaim({ settles: pending.settles, claim });
    return { settled: this.applySettles(items, pending, both.settled), events: both.events };
  }

  /** The store's settles of `items` (`at`: each one's item), and the results already known (a nack of an event not claimed). */
  private async prepareSettles(tenantId: string, items: PullSettleItem[]): Promise<PreparedSettles> {
    const now = this.deps.clock.now();
    const results: (PullSettleResult | null)[] = items.map(() => null);
    const settles: EventPullSettleParams[] = [];
    const at: number[] = [];
    const nacks = await Promise.all(
      items.map((item) => (item.end.action === 'nack' ? this.nackParams(tenantId, item, now) : null)),
    );
    items.forEach((item, i) => {
      if (item.end.action === 'ack') {
        settles.push({
          tenantId,
          id: item.id,
          receipt: item.receipt,
          attempts: null,
          action: 'ack',
          to: 'succeeded',
          now,
        });
        at.push(i);
        return;
      }
      const params = nacks[i];
      if (params === null) results[i] = { id: item.id, error: receiptConflict(item.id) };
      else {
        settles.push(params!);
        at.push(i);
      }
    });
    return { settles, at, results };
  }

  /** The results of `items` once the store answered their settles (`afters`, by settle); counts and announces what applied. */
  private applySettles(
    items: PullSettleItem[],
    pending: PreparedSettles,
    afters: (EventRecord | null)[],
  ): PullSettleResult[] {
    const { deps } = this;
    const results = pending.results;
    const applied: EventRecord[] = [];
    afters.forEach((after, k) => {
      const i = pending.at[k];
      if (!after) {
        results[i] = { id: items[i].id, error: receiptConflict(items[i].id) };
        return;
      }
      deps.metrics.pullEnded.inc({ action: items[i].end.action, state: after.state });
      applied.push(after);
      results[i] = { id: items[i].id, event: after };
    });
    if (applied.length > 0) deps.events.pullSettled(applied);
    return results as PullSettleResult[];
  }

  /** A nack's settle, decided by the event's retry policy; null when the event is not claimed. */
  private async nackParams(tenantId: string, item: PullSettleItem, now: number): Promise<EventPullSettleParams | null> {
    const { deps } = this;
    const event = await deps.store.eventGet({ tenantId, id: item.id });
    if (!event || event.state !== 'executing') return null;
    const name = 'name' in event.destination ? event.destination.name : null;
    const destination = name === null ? null : await deps.destinations.destinationGet({ tenantId, name });
    return decidePull({
      event,
      receipt: item.receipt,
      end: item.end,
      policy: pullPolicy(event, destination?.config ?? null),
      now,
      random: Math.random,
    });
  }

  /** Moves the claim's end to `visibleMs` from now (never earlier); a conflict unless `receipt` holds it. */
  async extend(tenantId: string, id: string, receipt: string, visibleMs: number): Promise<{ leaseUntil: number }> {
    const now = this.deps.clock.now();
    const leaseUntil = this.leaseNow() + visibleMs;
    const after = await this.deps.store.eventPullExtend({ tenantId, id, receipt, now, leaseUntil });
    if (!after) throw receiptConflict(id);
    return { leaseUntil: after.leaseUntil ?? leaseUntil };
  }
}
