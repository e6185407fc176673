/**
 * The due heap: the events the read-ahead loaded (due within the look-ahead), ordered by due
 * time, so the scheduler's one timer is set for the earliest and each fires at its millisecond
 * instead of at the next poll. (Named a "timer wheel" before; it is a binary heap, not a wheel.)
 *
 * A binary min-heap on (dueAt, insertion order) with lazy deletion: `put` of a key already present
 * replaces it (an update or reschedule), `remove` forgets it; stale heap nodes are skipped when
 * popped. The map holds at most one live entry per key; `size` counts live entries, and
 * `countOf` the live entries of one virtual queue (the scheduler bounds each queue's share).
 */
import { queueKeyOf } from '../core/queue.ts';
import type { DueRef } from '../store/store.ts';

interface Node {
  dueAt: number;
  seq: number;
  key: string;
  queueKey: string;
  ref: DueRef;
}

/** The key of an event in memory: its tenant and id. */
export function refKey(tenantId: string, id: string): string {
  return `${tenantId}\u0000${id}`;
}

/** Due refs by (dueAt, insertion order), one live entry per event, with per-queue counts. */
export class DueHeap {
  private heap: Node[] = [];
  private live = new Map<string, Node>();
  private perQueue = new Map<string, number>();
  private seq = 0;

  get size(): number {
    return this.live.size;
  }

  has(key: string): boolean {
    return this.live.has(key);
  }

  /** Live entries of one queue (`queueKeyOf(tenantId, queue)`). */
  countOf(queueKey: string): number {
    return this.perQueue.get(queueKey) ?? 0;
  }

  /** Adds or replaces the entry of this event. */
  put(ref: DueRef): void {
    const node: Node = {
      dueAt: ref.dueAt,
      seq: this.seq++,
      key: refKey(ref.tenantId, ref.id),
      queueKey: queueKeyOf(ref.tenantId, ref.queue),
      ref,
    };
    const replaced = this.live.get(node.key);
    if (replaced) this.uncount(replaced);
    this.live.set(node.key, node);
    this.perQueue.set(node.queueKey, this.countOf(node.queueKey) + 1);
    this.push(node);
    // Lazy deletion lets dead nodes pile up under heavy rescheduling: rebuild when they dominate.
    if (this.heap.length > 1024 && this.heap.length > 4 * this.live.size) this.rebuild();
  }

  remove(tenantId: string, id: string): void {
    const key = refKey(tenantId, id);
    const node = this.live.get(key);
    if (!node) return;
    this.live.delete(key);
    this.uncount(node);
  }

  /** Due time of the earliest live entry, or null. */
  peekDueAt(): number | null {
    this.dropDead();
    return this.heap.length > 0 ? this.heap[0].dueAt : null;
  }

  /** Removes and returns up to `max` live entries with dueAt ≤ nowMs, earliest first. */
  popDue(nowMs: number, max: number): DueRef[] {
    const out: DueRef[] = [];
    while (out.length < max) {
      this.dropDead();
      const top = this.heap[0];
      if (!top || top.dueAt > nowMs) break;
      this.pop();
      this.live.delete(top.key);
      this.uncount(top);
      out.push(top.ref);
    }
    return out;
  }

  /** Keeps only the live entries for which `keep` is true. */
  retain(keep: (ref: DueRef) => boolean): void {
    for (const [key, node] of this.live) {
      if (keep(node.ref)) continue;
      this.live.delete(key);
      this.uncount(node);
    }
  }

  clear(): void {
    this.heap = [];
    this.live.clear();
    this.perQueue.clear();
  }

  private uncount(node: Node): void {
    const n = this.countOf(node.queueKey) - 1;
    if (n > 0) this.perQueue.set(node.queueKey, n);
    else this.perQueue.delete(node.queueKey);
  }

  private dropDead(): void {
    while (this.heap.length > 0 && this.live.get(this.heap[0].key) !== this.heap[0]) this.pop();
  }

  private rebuild(): void {
    this.heap = [];
    for (const node of this.live.values()) this.push(node);
  }

  private less(a: Node, b: Node): boolean {
    return a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.seq < b.seq);
  }

  private push(node: Node): void {
    const h = this.heap;
    h.push(node);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(h[i], h[parent])) break;
      [h[i], h[parent]] = [h[parent], h[i]];
      i = parent;
    }
  }

  private pop(): Node | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l], h[m])) m = l;
        if (r < h.length && this.less(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}
