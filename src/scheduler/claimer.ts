/**
 * The claimer: one timer for the earliest event held in memory; when it fires, claims what
 * admission lets through, in batches, and hands what was claimed to the dispatcher.
 *
 *   timer at the earliest dueAt ──▶ runOnce: wait for a claim slot ──▶ admission.runOnce ──▶
 *   eventClaim (batched, conditional on state + version + group head, ≤ claimsInFlightMax at once)
 *   ──▶ onClaimed (dispatcher)        failed claim ──▶ read its events back (recoverClaim)
 *
 * Why a fire is conditional: memory holds (id, version) as read. A cancel or an update that
 * commits after the read bumps the version, so the claim skips the stale entry: the later write
 * wins. Timers run on monotonic time, decisions on wall time: when the wall clock goes back, an
 * entry's timer fires, finds nothing due, and re-arms, so nothing fires early.
 */
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import type { Metrics } from '../core/metrics.ts';
import { owns } from '../core/shard.ts';
import type { DueRef, Store } from '../store/store.ts';
import type { Admission } from './admission.ts';
import { refKey } from './due-heap.ts';

/** How claims are made. */
export interface ClaimerOptions {
  /** Refs per eventClaim call. */
  claimBatchMax: number;
  /** How long a claimed event stays leased to this node. */
  leaseMs: number;
  /** Cluster: claims check the stored shard map in the same statement (fencing). */
  fenceClaims: boolean;
  /**
   * Claim statements in flight at once (each of up to claimBatchMax refs), plus one small claim
   * for queues that have none in flight (waitForClaimSlot, splitLightQueues). Default
   * CLAIMS_IN_FLIGHT_DEFAULT; a store whose claim takes longer asks for more (its capabilities).
   */
  claimsInFlightMax?: number;
}

/** What the claimer claims from and hands to: the store, admission, the dispatcher, the scheduler's life. */
export interface ClaimerDeps {
  store: Pick<Store, 'eventClaim' | 'eventGet'>;
  clock: Clock;
  /** This process's identity for leases. */
  owner: string;
  metrics: Metrics;
  logger: Logger;
  admission: Admission;
  /**
   * The shards this node may fire now (null: all, a single node). Empty while its membership
   * has lapsed (no successful heartbeat within the node TTL less the safety margin): a claim
   * takes only refs of these, checked just before it is sent.
   */
  shards(): number[] | null;
  /** Receives every claimed event, in claim order. */
  onClaimed(events: EventRecord[]): void;
  /** Schedule occurrences: late ones are left out of a claim (beforeClaim), claimed first attempts counted (afterClaim). */
  occurrences?: {
    beforeClaim(due: DueRef[], now: number): Promise<DueRef[]>;
    afterClaim(claimed: EventRecord[]): void;
  };
  /** Whether the scheduler runs; false ends the claim loop. */
  isRunning(): boolean;
  /** Aborts the claim loop's sleeps at stop. */
  signal(): AbortSignal;
  /** A claim ended with refs still lined up: the room it held (refs it did not take) may let them go. */
  onClaimEnded(): void;
}

/** What one claim pass did. */
export interface ClaimPassResult {
  /** Claims started (eventClaim calls). */
  claims: number;
  /** Refs in them. */
  refs: number;
}

/** Distinct lease-end marks of a node's claims (see claim); far more than claims in flight at once. */
const CLAIM_MARKS = 997;
/**
 * Least time between the starts of two claims while events keep falling due (monotonic ms): a
 * claim is mostly per-statement cost, so events due at distinct milliseconds share one. An event
 * due after a quiet spell is claimed at once; under load, one waits at most this long.
 */
const CLAIM_SPACING_MS = 2;
/** Claims in flight at once unless the options say otherwise (ClaimerOptions.claimsInFlightMax). */
export const CLAIMS_IN_FLIGHT_DEFAULT = 4;
/**
 * While every claim slot is taken, how often the claim loop looks for due events of queues with
 * no claim in flight (monotonic ms): those take the one spare slot (see waitForClaimSlot).
 */
const SPARE_CLAIM_POLL_MS = 2;
/** Wait before reading a failed claim's events back, and between tries (monotonic ms). */
const RECOVER_RETRY_MS = 200;

const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Fires what admission lets through: the timer, the claim loop, the claims and their recovery. */
export class Claimer {
  /** Counts claims, for their lease-end marks. */
  private claimSeq = 0;
  private cancelTimer: (() => void) | null = null;
  private timerAt = Infinity;
  private firing = false;
  /** Settles when the claim pass in progress (if any) has ended. */
  private passEnded: Promise<void> = Promise.resolve();
  /** Claims started and not finished. */
  private readonly claimsInFlight = new Set<Promise<void>>();
  private lastClaimAtMs = -Infinity;

  constructor(
    private readonly deps: ClaimerDeps,
    private readonly opts: ClaimerOptions,
  ) {}

  private get inFlightMax(): number {
    return this.opts.claimsInFlightMax ?? CLAIMS_IN_FLIGHT_DEFAULT;
  }

  /** Sets the one timer for the earliest entry (or fires at once when it is already due). */
  armTimer(): void {
    if (!this.deps.isRunning()) return;
    // While a claim pass runs it re-reads memory until nothing is due, then re-arms.
    if (this.firing) return;
    const next = this.deps.admission.peekDueAt();
    if (next === null) return;
    const now = this.deps.clock.now();
    // Keep the armed timer when it is for an earlier or equal entry, unless the wall clock jumped
    // forward past the entry meanwhile (timers run on monotonic time): then fire now.
    if (next >= this.timerAt && this.cancelTimer && next > now) return;
    this.setFireTimer(next, now);
  }

  /** Room was freed and refs wait in their lines: runs the claim loop now unless it runs or is about to. */
  wake(): void {
    // While the claim loop runs it looks at the lines again after each of its waits.
    if (this.deps.admission.parkedCount > 0 && !this.firing) {
      const now = this.deps.clock.now();
      // A timer already due fires the claim loop anyway.
      if (!(this.cancelTimer && this.timerAt <= now)) this.setFireTimer(now, now);
    }
  }

  /** Cancels the timer (the scheduler stopped); stopped() then waits for what is in progress. */
  cancel(): void {
    this.cancelTimer?.();
    this.cancelTimer = null;
  }

  /** Settles once the claim pass and every claim in progress have ended (after cancel and a stop of isRunning). */
  async stopped(): Promise<void> {
    await this.passEnded;
    await Promise.allSettled([...this.claimsInFlight]);
  }

  /** Replaces the one timer with one that runs the claim loop at `at`. */
  private setFireTimer(at: number, now: number): void {
    this.cancelTimer?.();
    this.timerAt = at;
    this.cancelTimer = this.deps.clock.setTimer(at - now, () => {
      this.cancelTimer = null;
      this.timerAt = Infinity;
      void this.runOnce();
    });
  }

  /**
   * One claim pass: takes due refs from admission and claims them, in claims of at most
   * claimBatchMax refs, until admission has nothing due with room, and hands what was claimed to
   * the dispatcher. Refs beyond their queue's room stay lined up, unclaimed (they stay scheduled
   * in the store and spend no attempt). Up to claimsInFlightMax claims run at once (one more
   * for quiet queues), so an event due now is not held behind one claim's round trip (to
   * PostgreSQL or the SQLite thread). A pass already in progress makes this call return at once,
   * having done nothing.
   */
  async runOnce(): Promise<ClaimPassResult> {
    const done: ClaimPassResult = { claims: 0, refs: 0 };
    if (this.firing || !this.deps.isRunning()) return done;
    const { admission, clock } = this.deps;
    this.firing = true;
    let endPass!: () => void;
    this.passEnded = new Promise<void>((resolve) => (endPass = resolve));
    try {
      for (;;) {
        const spare = await this.waitForClaimSlot();
        if (!this.deps.isRunning()) break;
        let now = clock.now();
        const refs = admission.runOnce(now, this.opts.claimBatchMax, spare);
        if (refs.length === 0) {
          // Nothing has room; due entries left in the heap (beyond admission's line-up bound) wait in lines too.
          const next = admission.peekDueAt();
          if (next === null || next > now) break;
          await yieldToIo();
          continue;
        }
        // Events due at many distinct milliseconds would each make a claim of their own (a
        // transaction: most of a claim's cost). While claims follow each other closely, wait for
        // the spacing and take what fell due meanwhile into the same claim.
        const sinceMs = clock.monotonicMs() - this.lastClaimAtMs;
        if (!spare && refs.length < this.opts.claimBatchMax / 4 && sinceMs < CLAIM_SPACING_MS) {
          await clock.sleep(CLAIM_SPACING_MS - sinceMs, this.deps.signal()).catch(() => {});
          if (!this.deps.isRunning()) {
            for (const ref of refs) admission.putBack(ref);
            break;
          }
          now = clock.now();
          for (const ref of admission.runOnce(now, this.opts.claimBatchMax - refs.length)) refs.push(ref);
        }
        this.claimDue(refs, now, spare, done);
        // Let I/O (deliveries, API requests) and timers run between claims.
        await yieldToIo();
        if (!this.deps.isRunning()) break;
      }
    } finally {
      this.firing = false;
      endPass();
    }
    this.armTimer();
    return done;
  }

  /** Starts the claim(s) of the refs due by `now` (the wall clock may have gone back: the others wait again); counts them in `done`. */
  private claimDue(refs: DueRef[], now: number, spare: boolean, done: ClaimPassResult): void {
    const claimable: DueRef[] = [];
    for (const ref of refs) {
      if (ref.dueAt <= now) claimable.push(ref);
      else this.deps.admission.putBack(ref);
    }
    if (claimable.length === 0) return;
    this.lastClaimAtMs = this.deps.clock.monotonicMs();
    const parts = this.splitLightQueues(claimable, spare);
    for (const part of parts) this.startClaim(part, now);
    done.claims += parts.length;
    done.refs += claimable.length;
  }

  /**
   * Waits until a claim may start. Up to claimsInFlightMax claims run at once; while all of
   * them are taken (by a flooded queue, typically), one more may start for queues with no claim
   * in flight and events due: true then, and that claim takes only from those queues. So an event
   * of a quiet queue waits for a small claim of its own, not for a flood's claims to finish.
   */
  private async waitForClaimSlot(): Promise<boolean> {
    const max = this.inFlightMax;
    while (this.deps.isRunning() && this.claimsInFlight.size >= max) {
      if (this.claimsInFlight.size === max) {
        if (this.deps.admission.idleQueueDue(this.deps.clock.now())) return true;
      }
      // A sleep that loses the race ends by itself within SPARE_CLAIM_POLL_MS (and at stop).
      await Promise.race([
        ...this.claimsInFlight,
        this.deps.clock.sleep(SPARE_CLAIM_POLL_MS, this.deps.signal()).catch(() => {}),
      ]);
    }
    return false;
  }

  /** Light queues' refs in a small claim of their own, first (admission.splitLight), when a slot is left for it. */
  private splitLightQueues(refs: DueRef[], spare: boolean): DueRef[][] {
    if (spare || this.claimsInFlight.size + 2 > this.inFlightMax + 1) return [refs];
    return this.deps.admission.splitLight(refs);
  }

  private startClaim(refs: DueRef[], now: number): void {
    const keys = this.deps.admission.claimStarted(refs);
    const claim: Promise<void> = this.claim(refs, now).finally(() => {
      this.deps.admission.claimEnded(keys);
      this.claimsInFlight.delete(claim);
      // Refs a claim did not take (changed meanwhile) leave room; nothing else signals it.
      if (this.deps.admission.parkedCount > 0) this.deps.onClaimEnded();
    });
    this.claimsInFlight.add(claim);
  }

  private async claim(due: DueRef[], now: number): Promise<void> {
    let claimed: EventRecord[];
    // The lease end this claim writes doubles as its mark: a few ms added by a counter, so two
    // claims of this node never write the same one (recoverClaim tells them apart by it).
    const leaseUntil = now + this.opts.leaseMs + (this.claimSeq++ % CLAIM_MARKS);
    try {
      const checked = this.deps.occurrences ? await this.deps.occurrences.beforeClaim(due, now) : due;
      // Self-fencing: only shards this node may fire at the moment the claim is sent. Refs held
      // from before its membership lapsed (a partition, a pause, a failed claim put back) are
      // dropped, not claimed: the leader may be about to move those shards and rescue this
      // node's claims. The store's shard fence alone cannot tell, since the map still names this
      // node until the leader moves them. When the shards come back, read-ahead reads them again.
      const shards = this.deps.shards();
      const refs = checked.filter((r) => owns(shards, r.shard));
      if (refs.length === 0) return;
      claimed = await this.deps.store.eventClaim({
        refs: refs.map((r) => ({ tenantId: r.tenantId, id: r.id, version: r.version, group: r.group, shard: r.shard })),
        now,
        owner: this.deps.owner,
        leaseUntil,
        fenceByShardOwner: this.opts.fenceClaims,
      });
    } catch (err) {
      // The store is unreachable, or it committed the claim and its answer was lost. Read the
      // events back (holding this claim's slot meanwhile, so a store that is down is not asked
      // in a loop): those this claim took are delivered, the others wait in the heap again.
      this.deps.logger.error({ err, count: due.length }, 'claim failed; reading its events back');
      await this.recoverClaim(due, leaseUntil);
      this.armTimer();
      return;
    }
    this.deps.metrics.eventsFired.inc(claimed.length);
    this.deps.occurrences?.afterClaim(claimed);
    if (claimed.length > 0) this.deps.onClaimed(claimed);
  }

  /**
   * After a claim that failed: each ref's event as it stands. One executing under this owner at
   * the version and with the lease end (`leaseUntil`, the claim's mark) that claim would have
   * written was claimed by it (the answer was lost): it goes to the dispatcher, else it would
   * stay executing, its lease renewed, for as long as this node lives. (One claimed meanwhile by
   * another claim of this node, the ref having come back through the sweep, has another mark.)
   * The others go back to the heap. Tries again while the store does not answer, until stop.
   */
  private async recoverClaim(due: DueRef[], leaseUntil: number): Promise<void> {
    for (;;) {
      await this.deps.clock.sleep(RECOVER_RETRY_MS, this.deps.signal()).catch(() => {});
      if (!this.deps.isRunning()) return;
      try {
        const events = await Promise.all(due.map((r) => this.deps.store.eventGet({ tenantId: r.tenantId, id: r.id })));
        const claimed = events.filter(
          (e, i): e is EventRecord =>
            e !== null &&
            e.state === 'executing' &&
            e.leaseOwner === this.deps.owner &&
            e.version === due[i].version + 1 &&
            e.leaseUntil === leaseUntil,
        );
        if (claimed.length > 0) {
          this.deps.logger.warn(
            { count: claimed.length },
            'a claim committed though its answer was lost: delivering what it took',
          );
          this.deps.metrics.eventsFired.inc(claimed.length);
          this.deps.occurrences?.afterClaim(claimed);
          this.deps.onClaimed(claimed);
        }
        const taken = new Set(claimed.map((e) => refKey(e.tenantId, e.id)));
        const shards = this.deps.shards();
        for (const r of due)
          if (!taken.has(refKey(r.tenantId, r.id)) && owns(shards, r.shard)) this.deps.admission.putBackIfAbsent(r);
        return;
      } catch (err) {
        this.deps.logger.error({ err, count: due.length }, 'reading a failed claim back failed; retrying');
      }
    }
  }
}
