/**
 * The history of a run and the invariants checked on it, as things happen (each delivery attempt
 * as it starts, each claim and rescue as the database runs it) and at the end.
 *
 * Faults excuse some outcomes and nothing else: a claim whose node was killed, paused, cut off
 * from the store, slowed, or whose claim answer or lease renewal was lost is "faulted", and only a
 * faulted claim may be rescued from under its node, delivered twice, or overlap another member of
 * its group. A wall-clock step is not a fault that excuses anything: the cluster decides by the
 * store's clock.
 */
import type { DueEvent } from '../../src/channels/channel.ts';
import type { EventRecord } from '../../src/core/event.ts';
import type { World } from './world.ts';

/** An edit or replay applies while the version is below this (the promise of bounded traces). */
export const EVENT_CHANGES_MAX = 1_000;
/** Violations kept per invariant (the first ones say what went wrong). */
const VIOLATIONS_KEPT_PER_INVARIANT = 20;

export interface Violation {
  invariant: string;
  atMs: number;
  detail: string;
}

export interface ClaimRec {
  key: string;
  tenantId: string;
  id: string;
  version: number;
  attempts: number;
  group: string | null;
  node: string;
  atMs: number;
  /** The `now` the node claimed at (its judgement of the store's time). */
  nowParam: number;
  dueAt: number;
  fireAt: number;
  /** Why this claim's node may have lost it (null: it never did). */
  faulted: string | null;
  recorded: boolean;
  rescued: boolean;
}

export type RemoteResult = 'delivered' | 'failed' | 'discard' | 'hang';

export interface AttemptRec {
  n: number;
  claim: ClaimRec | null;
  node: string;
  dest: string;
  startMs: number;
  /** What the remote party did with it (decided when it arrived). */
  remote: RemoteResult;
  /** What the node heard (null: nothing yet; 'gone': the node died first). */
  heard: 'delivered' | 'failed' | 'discard' | 'timeout' | 'aborted' | 'gone' | null;
  endMs: number | null;
}

export interface EventHist {
  key: string;
  tenantId: string;
  id: string;
  group: string | null;
  origin: 'setup' | 'acked' | 'ambiguous' | 'occurrence';
  /** A cancel was sent (acked, refused or unknown). */
  cancelSent: boolean;
  /** Store time of the first `canceled` answer the client received. */
  cancelAckMs: number | null;
  /** Canceled by a node (an occurrence missed at its fire). */
  canceledByNode: boolean;
  /** fireAt of the acknowledged edit that made the highest version; null when none was acknowledged. */
  expectedFireAt: number | null;
  expectedVersion: number;
  editsUnknown: number;
  attempts: AttemptRec[];
  /** A pull consumer acked it. */
  pullAcked: boolean;
}

/** A pull claim of one event under one receipt. */
interface PullClaimRec {
  node: string;
  leaseUntil: number;
  atMs: number;
}

export function eventKey(tenantId: string, id: string): string {
  return `${tenantId}/${id}`;
}

export class History {
  readonly violations: Violation[] = [];
  private readonly perInvariant = new Map<string, number>();
  readonly events = new Map<string, EventHist>();
  private readonly claimsByVersion = new Map<string, ClaimRec>();
  private readonly claimsByAttempt = new Map<string, ClaimRec>();
  /** Per node: its claims not yet recorded nor rescued. */
  private readonly openClaims = new Map<string, Set<ClaimRec>>();
  /** Attempts in flight (the node has not heard their answer), per group key. */
  private readonly openByGroup = new Map<string, Set<AttemptRec>>();
  private readonly openByNode = new Map<string, Set<AttemptRec>>();
  /** Pull claims not yet settled, by `${receipt} ${event key}`. */
  private readonly pullClaims = new Map<string, PullClaimRec>();
  private attemptSeq = 0;
  /** Nodes in lasting faults (dead, paused, cut off, slow): the faults by token. */
  private readonly down = new Map<string, Map<number, string>>();
  private faultSeq = 0;
  readonly stats = {
    claims: 0,
    attempts: 0,
    delivered: 0,
    duplicates: 0,
    duplicatesExcused: 0,
    zombieAfterCancel: 0,
    pullClaims: 0,
    pullExpired: 0,
    rescuedFaulted: 0,
    faults: 0,
  };

  constructor(
    private readonly world: World,
    /** Counts a group's executing members in the store (a direct read of the database). */
    private readonly executingInGroup: (tenantId: string, group: string) => number,
  ) {}

  violate(invariant: string, detail: string): void {
    const n = (this.perInvariant.get(invariant) ?? 0) + 1;
    this.perInvariant.set(invariant, n);
    this.world.trace(`VIOLATION ${invariant}: ${detail}`);
    if (n <= VIOLATIONS_KEPT_PER_INVARIANT) this.violations.push({ invariant, atMs: this.world.mono, detail });
  }

  get violationCount(): number {
    let n = 0;
    for (const v of this.perInvariant.values()) n += v;
    return n;
  }

  event(tenantId: string, id: string, init?: Partial<EventHist>): EventHist {
    const key = eventKey(tenantId, id);
    let e = this.events.get(key);
    if (!e) {
      e = {
        key,
        tenantId,
        id,
        group: null,
        origin: 'ambiguous',
        cancelSent: false,
        cancelAckMs: null,
        canceledByNode: false,
        expectedFireAt: null,
        expectedVersion: 0,
        editsUnknown: 0,
        attempts: [],
        pullAcked: false,
        ...init,
      };
      this.events.set(key, e);
    }
    return e;
  }

  // ── the database ran a call ──────────────────────────────────────────────────────────────

  claimed(node: string, nowParam: number, events: EventRecord[], lost: boolean): void {
    const groups = new Set<string>();
    for (const e of events) {
      this.stats.claims++;
      const key = eventKey(e.tenantId, e.id);
      const claim: ClaimRec = {
        key,
        tenantId: e.tenantId,
        id: e.id,
        version: e.version,
        attempts: e.attempts,
        group: e.group,
        node,
        atMs: this.world.mono,
        nowParam,
        dueAt: e.dueAt,
        fireAt: e.fireAt,
        faulted: lost ? 'its claim answer was lost' : this.downReason(node),
        recorded: false,
        rescued: false,
      };
      this.claimsByVersion.set(`${key}#v${e.version}`, claim);
      this.claimsByAttempt.set(`${key}#a${e.attempts}`, claim);
      let open = this.openClaims.get(node);
      if (!open) this.openClaims.set(node, (open = new Set()));
      open.add(claim);
      const hist = this.event(e.tenantId, e.id, { origin: 'occurrence', group: e.group });
      hist.group = e.group;
      if (e.group !== null) groups.add(`${e.tenantId}\u0000${e.group}`);
      // Nothing claimed before it is due, by the store's clock.
      const storeNow = this.world.storeNow();
      if (storeNow < e.dueAt)
        this.violate(
          'early',
          `${key} claimed by ${node} at store time ${fmt(storeNow)}, ${e.dueAt - storeNow} ms before it is due (${fmt(e.dueAt)})`,
        );
    }
    for (const g of groups) {
      const [tenantId, group] = g.split('\u0000');
      const n = this.executingInGroup(tenantId, group);
      if (n > 1)
        this.violate(
          'group-executing',
          `group ${tenantId}/${group} has ${n} members executing in the store after a claim by ${node}`,
        );
    }
  }

  /** A pull claim ran: `leaseUntil` is its visibility timeout (store clock, as the node judged it). */
  pullClaimed(node: string, receipt: string, leaseUntil: number, events: EventRecord[]): void {
    const storeNow = this.world.storeNow();
    const groups = new Set<string>();
    for (const e of events) {
      this.stats.pullClaims++;
      const key = eventKey(e.tenantId, e.id);
      this.pullClaims.set(`${receipt} ${key}`, { node, leaseUntil, atMs: this.world.mono });
      const hist = this.event(e.tenantId, e.id, { origin: 'occurrence', group: e.group });
      hist.group = e.group;
      if (storeNow < e.dueAt)
        this.violate(
          'early',
          `${key} pulled through ${node} at store time ${fmt(storeNow)}, ${e.dueAt - storeNow} ms before it is due`,
        );
      if (e.group !== null) groups.add(`${e.tenantId}\u0000${e.group}`);
    }
    for (const g of groups) {
      const [tenantId, group] = g.split('\u0000');
      const n = this.executingInGroup(tenantId, group);
      if (n > 1)
        this.violate(
          'group-executing',
          `group ${tenantId}/${group} has ${n} members executing in the store after a pull claim through ${node}`,
        );
    }
  }

  /** A pull claim ended (ack, nack, or its expiry by a node's expirer). */
  pullSettled(node: string, action: string, receipt: string, event: EventRecord): void {
    const key = eventKey(event.tenantId, event.id);
    const claim = this.pullClaims.get(`${receipt} ${key}`);
    this.pullClaims.delete(`${receipt} ${key}`);
    if (action === 'ack') this.event(event.tenantId, event.id).pullAcked = true;
    if (action !== 'expire') return;
    this.stats.pullExpired++;
    // A visibility timeout ends by the store's clock, never before.
    const storeNow = this.world.storeNow();
    if (claim && storeNow < claim.leaseUntil) {
      this.violate(
        'pull-expired-early',
        `${key}: ${node} expired the pull claim ${receipt} (made through ${claim.node}) at store time ${fmt(storeNow)}, ${claim.leaseUntil - storeNow} ms before its visibility timeout`,
      );
    }
  }

  recorded(outcomes: { tenantId: string; id: string; version: number }[], applied: boolean[]): void {
    outcomes.forEach((o, i) => {
      if (!applied[i]) return;
      const claim = this.claimsByVersion.get(`${eventKey(o.tenantId, o.id)}#v${o.version}`);
      if (!claim) return;
      claim.recorded = true;
      this.openClaims.get(claim.node)?.delete(claim);
    });
  }

  /** Executing events made due again (lease expiry, a dead node's claims, a previous run's). */
  rescued(node: string, kind: string, refs: { tenantId: string; id: string; version: number }[]): void {
    for (const r of refs) {
      const key = eventKey(r.tenantId, r.id);
      const claim = this.claimsByVersion.get(`${key}#v${r.version - 1}`);
      this.world.trace(
        `${node} ${kind} rescued ${key} (claim of ${claim?.node ?? '?'}${claim?.faulted ? `, faulted: ${claim.faulted}` : ''})`,
      );
      if (!claim) continue;
      claim.rescued = true;
      this.openClaims.get(claim.node)?.delete(claim);
      if (claim.faulted) this.stats.rescuedFaulted++;
      else
        this.violate(
          'rescued-live-claim',
          `${key}: ${node} (${kind}) rescued the live claim of ${claim.node} made at ${claim.atMs} ms, whose node had no fault`,
        );
    }
  }

  // ── faults ───────────────────────────────────────────────────────────────────────────────

  /**
   * Every claim `node` holds unrecorded may now be lost to it. With `lasting`, so may every claim
   * the store makes for it until `up(node, token)` with the token returned (its calls still in
   * flight land while it is dead, paused, cut off or slow). Lasting faults may overlap.
   */
  faulted(node: string, reason: string, lasting = false): number {
    this.stats.faults++;
    for (const claim of this.openClaims.get(node) ?? []) claim.faulted ??= reason;
    if (!lasting) return 0;
    let faults = this.down.get(node);
    if (!faults) {
      this.down.set(node, (faults = new Map()));
      this.world.trace(`${node} faulted: ${reason}`);
    }
    const token = ++this.faultSeq;
    faults.set(token, reason);
    return token;
  }

  /** The lasting fault `token` of `node` is over. */
  up(node: string, token: number): void {
    const faults = this.down.get(node);
    if (!faults?.delete(token) || faults.size > 0) return;
    this.down.delete(node);
    this.world.trace(`${node} fault over`);
  }

  /** Why `node` is in a lasting fault now (null: it is not). */
  private downReason(node: string): string | null {
    const faults = this.down.get(node);
    return faults ? [...faults.values()][0] : null;
  }

  killed(node: string): void {
    this.faulted(node, 'its node was killed', true);
    for (const a of [...(this.openByNode.get(node) ?? [])]) this.attemptEnd(a, 'gone');
  }

  // ── the remote party ─────────────────────────────────────────────────────────────────────

  attemptStart(node: string, due: DueEvent, dest: string, remote: RemoteResult): AttemptRec {
    this.stats.attempts++;
    const key = eventKey(due.tenantId, due.id);
    const claim = this.claimsByAttempt.get(`${key}#a${due.attempt}`) ?? null;
    const a: AttemptRec = {
      n: ++this.attemptSeq,
      claim,
      node,
      dest,
      startMs: this.world.mono,
      remote,
      heard: null,
      endMs: null,
    };
    const hist = this.event(due.tenantId, due.id);
    const storeNow = this.world.storeNow();
    const excused = (c: ClaimRec | null) => c?.faulted ?? null;
    if (!claim) this.violate('attempt-without-claim', `${key} attempt ${due.attempt} sent by ${node} matches no claim`);
    // Nothing early, by the store's clock.
    if (storeNow < due.dueAt)
      this.violate(
        'early',
        `${key} sent by ${node} at store time ${fmt(storeNow)}, ${due.dueAt - storeNow} ms before it is due (${fmt(due.dueAt)})`,
      );
    if (due.fireAt !== undefined && storeNow < due.fireAt)
      this.violate('early', `${key} sent by ${node} ${due.fireAt - storeNow} ms before its fireAt`);
    // Nothing after a `canceled` answer.
    if (hist.cancelAckMs !== null && storeNow >= hist.cancelAckMs) {
      if (excused(claim)) this.stats.zombieAfterCancel++;
      else
        this.violate(
          'after-cancel',
          `${key} sent by ${node} ${storeNow - hist.cancelAckMs} ms after the client was told it was canceled`,
        );
    }
    // An acknowledged edit is what is delivered.
    if (
      hist.expectedFireAt !== null &&
      hist.editsUnknown === 0 &&
      due.fireAt !== undefined &&
      due.fireAt !== hist.expectedFireAt &&
      !excused(claim)
    ) {
      this.violate(
        'stale-edit',
        `${key} sent by ${node} with fireAt ${fmt(due.fireAt)}, but an acknowledged edit set ${fmt(hist.expectedFireAt)}`,
      );
    }
    // Duplicates only where a fault explains them: an earlier attempt whose node heard `delivered`.
    for (const p of hist.attempts) {
      if (p.remote !== 'delivered') continue;
      this.stats.duplicates++;
      if (p.heard === 'delivered' && !excused(p.claim) && !excused(claim)) {
        this.violate(
          'duplicate',
          `${key} sent again by ${node} (attempt ${due.attempt}) after ${p.node} delivered it and heard so at ${p.endMs} ms, with no fault on either claim`,
        );
      } else this.stats.duplicatesExcused++;
      break;
    }
    // At most one member of a group in flight.
    if (hist.group !== null) {
      const gk = `${due.tenantId}\u0000${hist.group}`;
      let open = this.openByGroup.get(gk);
      if (!open) this.openByGroup.set(gk, (open = new Set()));
      for (const o of open) {
        if (o.claim?.key === key) continue;
        if (excused(o.claim) || excused(claim)) continue;
        this.violate(
          'group-in-flight',
          `group ${due.tenantId}/${hist.group}: ${key} sent by ${node} while ${o.claim?.key} (sent by ${o.node} at ${o.startMs} ms) is in flight`,
        );
      }
      open.add(a);
    }
    let byNode = this.openByNode.get(node);
    if (!byNode) this.openByNode.set(node, (byNode = new Set()));
    byNode.add(a);
    hist.attempts.push(a);
    if (remote === 'delivered') this.stats.delivered++;
    return a;
  }

  attemptEnd(a: AttemptRec, heard: NonNullable<AttemptRec['heard']>): void {
    if (a.heard !== null) return;
    a.heard = heard;
    a.endMs = this.world.mono;
    this.openByNode.get(a.node)?.delete(a);
    const hist = a.claim ? this.events.get(a.claim.key) : undefined;
    if (hist?.group != null) this.openByGroup.get(`${hist.tenantId}\u0000${hist.group}`)?.delete(a);
  }

  /** Attempts in flight on `node` to `dest`. */
  inFlight(node: string, dest: string): number {
    let n = 0;
    for (const a of this.openByNode.get(node) ?? []) if (a.dest === dest) n++;
    return n;
  }
}

/** A store time as the trace shows it: seconds from the run's epoch. */
let epochMs = 0;
export function setTraceEpoch(ms: number): void {
  epochMs = ms;
}
export function fmt(ms: number): string {
  return `${((ms - epochMs) / 1000).toFixed(3)}s`;
}
