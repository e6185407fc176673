/**
 * Admission: which due events the scheduler holds in memory, and which of them the next claim
 * takes. Pure and synchronous: the read-ahead feeds it refs, the claimer asks it for each claim's
 * refs and tells it when a claim starts and ends; the room of each queue and of the node is read
 * from the dispatcher through its deps.
 *
 *   read-ahead ──admit──▶ due heap ──lineUpDue (due by now)──▶ lines, one per virtual queue
 *                  │ queue holds queueRefsMax                       │ runOnce: deficit round robin,
 *                  ▼                                                ▼ each queue up to its room
 *             overflow mark (rows stay in the store)            refs of one claim ──▶ claimer
 *
 * Isolation (the isolation invariant): every virtual queue's share is bounded twice.
 *   - Claims: a due entry leaves the heap for its queue's line, and claims take from the lines
 *     in turn (deficit round robin), each queue only while it has room (`queueRoom`: fewer
 *     claimed-but-unrecorded events than its bound) and the node has room (`dispatchBacklogMax`).
 *     What has no room stays in its line (parked), unclaimed, until the dispatcher records
 *     outcomes. A claim is small and each queue with due events gets its share of it, so one
 *     tenant's flood neither takes the node's bound nor makes another queue's due event wait for
 *     more than the claim in progress.
 *   - Memory: a queue holds at most `queueRefsMax` entries (heap plus lines); further rows of it
 *     stay in the store, and the first of them is remembered (an overflow mark, parked.ts). The
 *     read-ahead refills such a queue from its mark when it has drained to half.
 */
import { queueKeyOf } from '../core/queue.ts';
import type { DueRef } from '../store/store.ts';
import { DueHeap, refKey } from './due-heap.ts';
import { OverflowMarks, ParkedQueues } from './parked.ts';

/** A backlogged queue is topped up in chunks of at most this many claims. */
const UNPARK_CHUNK_MAX = 200;
/** Least share of a claim each queue with due events gets before others fill it. */
export const CLAIM_SHARE_MIN = 16;
/** Entries moved from the heap to the lines per call (the move is cheap; the bound keeps it incremental). */
const LINE_UP_MAX = 5_000;

/** Bounds on what admission holds and lets through. */
export interface AdmissionOptions {
  /** Bound on the events held in memory (timer plus parked); the read-ahead pauses when full. */
  wheelSizeMax: number;
  /** Bound on one virtual queue's events in memory (timer plus parked); its other rows wait in the store. */
  queueRefsMax: number;
  /** The node's bound on claimed-but-unrecorded events, over all queues (memory bound). */
  dispatchBacklogMax: number;
}

/** The dispatcher's room, as admission reads it. */
export interface AdmissionDeps {
  /** Events handed to the dispatcher and not yet finished. */
  dispatchBacklog(): number;
  /**
   * How many more events of this queue (`queueKeyOf(tenantId, queue)`) may be claimed now: its
   * bound minus its claimed-but-unrecorded events. Absent: no bound per queue.
   */
  queueRoom?(queueKey: string): number;
  /** The bound queueRoom counts down from (absent: none). */
  queueBound?(queueKey: string): number;
}

/** Counts per key, entries at zero removed. */
class Counts {
  private readonly map = new Map<string, number>();
  total = 0;

  countOf(key: string): number {
    return this.map.get(key) ?? 0;
  }

  add(key: string): void {
    this.map.set(key, this.countOf(key) + 1);
    this.total++;
  }

  remove(key: string): void {
    const n = this.countOf(key) - 1;
    if (n > 0) this.map.set(key, n);
    else this.map.delete(key);
    this.total--;
  }
}

/** The due events held in memory (a heap until due, then a line per queue) and the claims' fair shares. */
export class Admission {
  private readonly heap = new DueHeap();
  private readonly lines = new ParkedQueues();
  /** Queues with due rows left in the store, and where those rows start. */
  readonly overflow = new OverflowMarks();
  /** Refs in claims started and not finished, per queue. */
  private readonly claiming = new Counts();

  constructor(
    private readonly deps: AdmissionDeps,
    private readonly opts: AdmissionOptions,
  ) {}

  /** Events held: waiting for their due time, or due and lined up (parked) for room. */
  get size(): number {
    return this.heap.size + this.lines.size;
  }

  /** Due events lined up and not claimed: their queue (or the node) had no room yet. */
  get parkedCount(): number {
    return this.lines.size;
  }

  /** Memory holds wheelSizeMax events: the read-ahead reads no more until some are claimed. */
  memoryFull(): boolean {
    return this.size >= this.opts.wheelSizeMax;
  }

  /** Events of one queue held (heap plus line). */
  heldOf(queueKey: string): number {
    return this.heap.countOf(queueKey) + this.lines.countOf(queueKey);
  }

  /** How many more of a queue's events memory may hold. */
  memoryLeftOf(queueKey: string): number {
    return this.opts.queueRefsMax - this.heldOf(queueKey);
  }

  /** The queue has rows left in the store and has drained below half of its memory bound. */
  needsRefill(queueKey: string): boolean {
    return this.heldOf(queueKey) * 2 < this.opts.queueRefsMax && this.overflow.has(queueKey);
  }

  /** Due time of the earliest entry waiting in the heap, or null. */
  peekDueAt(): number | null {
    return this.heap.peekDueAt();
  }

  /**
   * A ref read from the store enters the heap unless it is already held (heap or line) or its
   * queue holds `queueRefsMax` already: then it stays in the store and its queue is marked for a
   * refill from it. A ref after the mark of a queue with rows left in the store stays there too,
   * so the queue's events go in due order (a queue over its capacity cannot starve its oldest
   * events with new ones). Returns whether it entered.
   */
  admit(ref: DueRef): boolean {
    const key = refKey(ref.tenantId, ref.id);
    if (this.heap.has(key) || this.lines.has(key)) return false;
    const queueKey = queueKeyOf(ref.tenantId, ref.queue);
    if (this.overflow.covers(queueKey, ref)) return false;
    if (this.heldOf(queueKey) >= this.opts.queueRefsMax) {
      this.overflow.mark(queueKey, ref);
      return false;
    }
    this.heap.put(ref);
    return true;
  }

  /** A newer version of a ref made in this process: replaces the held one, or is admitted. */
  upsert(ref: DueRef): void {
    if (this.lines.replace(ref)) return;
    if (this.heap.has(refKey(ref.tenantId, ref.id))) this.heap.put(ref);
    else this.admit(ref);
  }

  /** The event is no longer fireable (canceled, moved beyond the look-ahead): out of memory. */
  forget(tenantId: string, id: string): void {
    this.heap.remove(tenantId, id);
    this.lines.remove(refKey(tenantId, id));
  }

  /** A ref taken for a claim that did not go out (not due by the wall clock, or stopped): it waits in the heap again. */
  putBack(ref: DueRef): void {
    this.heap.put(ref);
  }

  /** As putBack, unless the heap holds a ref of that event already (a newer one, read again meanwhile). */
  putBackIfAbsent(ref: DueRef): void {
    if (!this.heap.has(refKey(ref.tenantId, ref.id))) this.heap.put(ref);
  }

  /** Keeps only the held refs for which `keep` is true (the shards this node still owns). */
  retain(keep: (ref: DueRef) => boolean): void {
    this.heap.retain(keep);
    this.lines.retain(keep);
  }

  /** Forgets everything held, overflow marks included (the scheduler stopped). */
  clear(): void {
    this.heap.clear();
    this.lines.clear();
    this.overflow.clear();
  }

  /**
   * One claim's admission: lines up what fell due by `now` (at most LINE_UP_MAX entries, so a
   * burst of hundreds of thousands moves between claims) and takes up to `max` refs from the
   * lines in turn (takeInTurn). Returns them; empty when nothing due has room.
   */
  runOnce(now: number, max: number, idleQueuesOnly = false): DueRef[] {
    this.lineUpDue(now);
    return this.takeInTurn(max, idleQueuesOnly);
  }

  /** Lines up what fell due by `now`; whether some queue with no claim in flight has due events and room. */
  idleQueueDue(now: number): boolean {
    this.lineUpDue(now);
    if (this.globalRoom() - this.claiming.total <= 0) return false;
    for (const key of this.lines.queuesInTurn()) {
      if (this.claiming.countOf(key) === 0 && this.roomToTake(key) > 0) return true;
    }
    return false;
  }

  /** A claim of these refs started: they count against their queues' room until claimEnded. Returns its queue keys. */
  claimStarted(refs: DueRef[]): string[] {
    const keys = refs.map((r) => queueKeyOf(r.tenantId, r.queue));
    for (const key of keys) this.claiming.add(key);
    return keys;
  }

  /** The claim that claimStarted returned these keys for has ended. */
  claimEnded(keys: string[]): void {
    for (const key of keys) this.claiming.remove(key);
  }

  /**
   * A claim's duration follows its size (on PostgreSQL under load, tens of ms for 250 rows): the
   * refs of light queues (all they had due, at most CLAIM_SHARE_MIN) go in a small claim of their
   * own, first. One claim when there are not both light and heavy queues.
   */
  splitLight(refs: DueRef[]): DueRef[][] {
    const keys = refs.map((r) => queueKeyOf(r.tenantId, r.queue));
    const perQueue = new Map<string, number>();
    for (const key of keys) perQueue.set(key, (perQueue.get(key) ?? 0) + 1);
    if (perQueue.size < 2) return [refs];
    const light: DueRef[] = [];
    const heavy: DueRef[] = [];
    refs.forEach((r, i) =>
      (perQueue.get(keys[i])! <= CLAIM_SHARE_MIN && this.lines.countOf(keys[i]) === 0 ? light : heavy).push(r),
    );
    return light.length === 0 || heavy.length === 0 ? [refs] : [light, heavy];
  }

  /** Moves entries due by `now` from the heap to their queues' lines (due order within a queue). */
  private lineUpDue(now: number): void {
    for (const ref of this.heap.popDue(now, LINE_UP_MAX)) this.lines.park(queueKeyOf(ref.tenantId, ref.queue), ref);
  }

  /**
   * Takes up to `max` due refs for one claim from the queues' lines, in turn (deficit round
   * robin): each queue first gets an even share of the claim, then what others left, never more
   * than its room (its bound minus what it has claimed or is claiming) nor, over all queues, the
   * node's. A queue at its bound with a backlog waits until its room is a chunk (a quarter of its
   * bound, at most UNPARK_CHUNK_MAX): a claim's cost is mostly per statement. So a flooded queue
   * fills a claim only with what no other queue has due, and an event due in another queue waits
   * for at most the one claim in progress, whatever the flood.
   */
  private takeInTurn(max: number, idleQueuesOnly: boolean): DueRef[] {
    let budget = Math.min(max, this.globalRoom() - this.claiming.total);
    const out: DueRef[] = [];
    if (budget <= 0 || this.lines.size === 0) return out;
    const queues: { key: string; room: number }[] = [];
    for (const key of this.lines.queuesInTurn()) {
      if (idleQueuesOnly && this.claiming.countOf(key) > 0) continue;
      const room = this.roomToTake(key);
      if (room > 0) queues.push({ key, room });
    }
    const share = Math.max(CLAIM_SHARE_MIN, Math.ceil(budget / Math.max(1, queues.length)));
    for (const pass of [share, Infinity]) {
      for (const q of queues) {
        if (budget <= 0) return out;
        const refs = this.lines.take(q.key, Math.min(q.room, pass, budget));
        q.room -= refs.length;
        budget -= refs.length;
        for (const ref of refs) out.push(ref);
      }
    }
    return out;
  }

  private unparkChunk(queueKey: string): number {
    const bound = this.deps.queueBound?.(queueKey) ?? 0;
    return Math.max(1, Math.min(UNPARK_CHUNK_MAX, Math.floor(bound / 4)));
  }

  private globalRoom(): number {
    return this.opts.dispatchBacklogMax - this.deps.dispatchBacklog();
  }

  /**
   * How many of a queue's lined-up refs a claim may take now: its room (its bound minus what it
   * has claimed or is claiming), or 0 while that room is under a chunk and the queue has more
   * lined up (a claim's cost is mostly per statement).
   */
  private roomToTake(queueKey: string): number {
    const room = this.queueRoom(queueKey) - this.claiming.countOf(queueKey);
    return room <= 0 || room < Math.min(this.unparkChunk(queueKey), this.lines.countOf(queueKey)) ? 0 : room;
  }

  private queueRoom(queueKey: string): number {
    return this.deps.queueRoom ? this.deps.queueRoom(queueKey) : Infinity;
  }
}
