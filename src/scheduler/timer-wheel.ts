/**
 * The in-memory timer of the read-ahead: the events due within the look-ahead, ordered by due
 * time, so each fires at its millisecond instead of at the next poll.
 *
 * A binary min-heap on (dueAt, insertion order) with lazy deletion: `put` of a key already present
 * replaces it (an update or reschedule), `remove` forgets it; stale heap nodes are skipped when
 * popped. The map holds at most one live entry per key; `size` counts live entries.
 */
import type { DueRef } from '../store/store.ts';

interface Node {
  dueAt: number;
  seq: number;
  key: string;
  ref: DueRef;
}

export function refKey(tenantId: string, id: string): string {
  return `${tenantId}\u0000${id}`;
}

export class TimerWheel {
  private heap: Node[] = [];
  private live = new Map<string, Node>();
  private seq = 0;

  get size(): number {
    return this.live.size;
  }

  has(key: string): boolean {
    return this.live.has(key);
  }

  /** Adds or replaces the entry of this event. */
  put(ref: DueRef): void {
    const node: Node = { dueAt: ref.dueAt, seq: this.seq++, key: refKey(ref.tenantId, ref.id), ref };
    this.live.set(node.key, node);
    this.push(node);
    // Lazy deletion lets dead nodes pile up under heavy rescheduling: rebuild when they dominate.
    if (this.heap.length > 1024 && this.heap.length > 4 * this.live.size) this.rebuild();
  }

  remove(tenantId: string, id: string): void {
    this.live.delete(refKey(tenantId, id));
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
      out.push(top.ref);
    }
    return out;
  }

  /** Keeps only the live entries for which `keep` is true. */
  retain(keep: (ref: DueRef) => boolean): void {
    for (const [key, node] of this.live) if (!keep(node.ref)) this.live.delete(key);
  }

  clear(): void {
    this.heap = [];
    this.live.clear();
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
