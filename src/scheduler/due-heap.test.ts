import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DueHeap } from './due-heap.ts';
import type { DueRef } from '../store/store.ts';

const ref = (id: string, dueAt: number, version = 1): DueRef => ({
  tenantId: 't',
  id,
  version,
  dueAt,
  shard: 0,
  group: null,
  queue: 'name:d',
});

describe('DueHeap', () => {
  it('pops due entries in due order, ties in insertion order', () => {
    const w = new DueHeap();
    w.put(ref('c', 30));
    w.put(ref('a', 10));
    w.put(ref('b', 10));
    w.put(ref('d', 40));
    assert.deepEqual(
      w.popDue(30, 10).map((r) => r.id),
      ['a', 'b', 'c'],
    );
    assert.equal(w.size, 1);
    assert.equal(w.peekDueAt(), 40);
  });

  it('replaces an entry on put of the same key and forgets removed ones', () => {
    const w = new DueHeap();
    w.put(ref('a', 10));
    w.put(ref('a', 50, 2));
    w.put(ref('b', 20));
    w.remove('t', 'b');
    assert.deepEqual(w.popDue(40, 10), []);
    const [a] = w.popDue(50, 10);
    assert.equal(a.version, 2);
    assert.equal(w.size, 0);
    assert.equal(w.peekDueAt(), null);
  });

  it('bounds each pop by max', () => {
    const w = new DueHeap();
    for (let i = 0; i < 100; i++) w.put(ref(`e${i}`, i));
    assert.equal(w.popDue(1000, 30).length, 30);
    assert.equal(w.size, 70);
  });

  it('stays ordered under heavy rescheduling (rebuilds its heap)', () => {
    const w = new DueHeap();
    for (let round = 0; round < 10; round++)
      for (let i = 0; i < 500; i++) w.put(ref(`e${i}`, (i * 7919 + round) % 1000, round));
    const out = w.popDue(10_000, 10_000);
    assert.equal(out.length, 500);
    for (let i = 1; i < out.length; i++) assert.ok(out[i - 1].dueAt <= out[i].dueAt);
    assert.ok(out.every((r) => r.version === 9));
  });
});
