/**
 * Due events the scheduler holds back because their virtual queue is at its claim bound (or the
 * node at its own): parked per queue, oldest first, and handed back when the dispatcher frees room.
 * And the queues whose due events did not all fit in memory: for each, the first (dueAt, id) left
 * in the store, from which the scheduler refills that queue alone (store index per queue).
 *
 * Both are bounded by the scheduler: a queue's parked plus timer entries never pass its
 * `queueRefsMax`, and the overflow map has one entry per queue that has rows left behind.
 */
import { refKey } from './due-heap.ts';
import type { DueRef } from '../store/store.ts';

export class ParkedQueues {
  private readonly byQueue = new Map<string, Map<string, DueRef>>();
  private readonly queueOfRef = new Map<string, string>();
  /** Where the round robin over queues starts next (fair hand-back when the node is at its bound). */
  private rotation = 0;

  get size(): number {
    return this.queueOfRef.size;
  }

  has(key: string): boolean {
    return this.queueOfRef.has(key);
  }

  countOf(queueKey: string): number {
    return this.byQueue.get(queueKey)?.size ?? 0;
  }

  park(queueKey: string, ref: DueRef): void {
    const key = refKey(ref.tenantId, ref.id);
    this.remove(key);
    let refs = this.byQueue.get(queueKey);
    if (!refs) this.byQueue.set(queueKey, (refs = new Map()));
    refs.set(key, ref);
    this.queueOfRef.set(key, queueKey);
  }

  /** Replaces a parked ref in place (a newer version of it); false when it is not parked. */
  replace(ref: DueRef): boolean {
    const key = refKey(ref.tenantId, ref.id);
    const queueKey = this.queueOfRef.get(key);
    if (queueKey === undefined) return false;
    this.byQueue.get(queueKey)!.set(key, ref);
    return true;
  }

  remove(key: string): void {
    const queueKey = this.queueOfRef.get(key);
    if (queueKey === undefined) return;
    this.queueOfRef.delete(key);
    const refs = this.byQueue.get(queueKey)!;
    refs.delete(key);
    if (refs.size === 0) this.byQueue.delete(queueKey);
  }

  /** Removes and returns up to `n` of a queue's parked refs, oldest first. */
  take(queueKey: string, n: number): DueRef[] {
    const refs = this.byQueue.get(queueKey);
    const out: DueRef[] = [];
    if (!refs) return out;
    for (const [key, ref] of refs) {
      if (out.length >= n) break;
      refs.delete(key);
      this.queueOfRef.delete(key);
      out.push(ref);
    }
    if (refs.size === 0) this.byQueue.delete(queueKey);
    return out;
  }

  /** The queues with parked refs, starting one further on each call (round robin). */
  queuesInTurn(): string[] {
    const keys = [...this.byQueue.keys()];
    if (keys.length === 0) return keys;
    const start = this.rotation++ % keys.length;
    return [...keys.slice(start), ...keys.slice(0, start)];
  }

  retain(keep: (ref: DueRef) => boolean): void {
    for (const [key, queueKey] of this.queueOfRef) {
      if (!keep(this.byQueue.get(queueKey)!.get(key)!)) this.remove(key);
    }
  }

  clear(): void {
    this.byQueue.clear();
    this.queueOfRef.clear();
  }
}

/** Where a queue's rows left in the store start: (dueAt, id), inclusive. */
export interface OverflowMark {
  tenantId: string;
  queue: string;
  from: { dueAt: number; id: string };
}

/** Whether `a` comes at or before `b` in a queue's (dueAt, id) order. */
function atOrBefore(a: { dueAt: number; id: string }, b: { dueAt: number; id: string }): boolean {
  return a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.id <= b.id);
}

export class OverflowMarks {
  private readonly marks = new Map<string, OverflowMark>();

  get size(): number {
    return this.marks.size;
  }

  has(queueKey: string): boolean {
    return this.marks.has(queueKey);
  }

  /** Records that `ref` (and maybe rows after it) stayed in the store; keeps the earliest. */
  mark(queueKey: string, ref: Pick<DueRef, 'tenantId' | 'queue' | 'dueAt' | 'id'>): void {
    if (this.covers(queueKey, ref)) return;
    this.marks.set(queueKey, { tenantId: ref.tenantId, queue: ref.queue, from: { dueAt: ref.dueAt, id: ref.id } });
  }

  /** Whether rows of this queue from `ref` on may still be in the store (so `ref` must wait its turn). */
  covers(queueKey: string, ref: Pick<DueRef, 'dueAt' | 'id'>): boolean {
    const cur = this.marks.get(queueKey);
    return cur !== undefined && atOrBefore(cur.from, ref);
  }

  take(queueKey: string): OverflowMark | undefined {
    const mark = this.marks.get(queueKey);
    this.marks.delete(queueKey);
    return mark;
  }

  keys(): string[] {
    return [...this.marks.keys()];
  }

  /** Up to `max` marks, for a read that leaves those queues' rows from their marks on in the store. */
  some(max: number): OverflowMark[] {
    const out: OverflowMark[] = [];
    for (const mark of this.marks.values()) {
      if (out.length >= max) break;
      out.push(mark);
    }
    return out;
  }

  clear(): void {
    this.marks.clear();
  }
}
