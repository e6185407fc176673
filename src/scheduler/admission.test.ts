/**
 * Admission alone, synchronous: what memory holds of each queue, and how each claim's refs are
 * shared between queues. The isolation invariant at this level: a queue with 200,000 due events
 * and one with 100 due in the same millisecond; the second's are in the first claims, every queue
 * gets its share, no queue passes its room nor the node its own, and what has no room stays
 * parked (unclaimed) or in the store (an overflow mark).
 *
 * The dispatcher is played by the test: `held` per queue, room = bound − held.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { queueKeyOf } from '../core/queue.ts';
import type { DueRef } from '../store/store.ts';
import { Admission, CLAIM_SHARE_MIN, type AdmissionOptions } from './admission.ts';

const T = Date.UTC(2026, 5, 1, 12, 0, 0);
const OPTS: AdmissionOptions = { wheelSizeMax: 500_000, queueRefsMax: 10_000, dispatchBacklogMax: 20_000 };

function refs(tenantId: string, destination: string, count: number, dueAt: number, version = 1): DueRef[] {
  return Array.from({ length: count }, (_, i) => ({
    tenantId,
    id: `${destination}-${String(i).padStart(6, '0')}`,
    version,
    dueAt,
    shard: 0,
    group: null,
    queue: `name:${destination}`,
  }));
}

const keyA = queueKeyOf('ta', 'name:a');
const keyB = queueKeyOf('tb', 'name:b');
const countIn = (claim: DueRef[], tenantId: string) => claim.filter((r) => r.tenantId === tenantId).length;

/** An admission with a played dispatcher: `bounds` per queue key (default `bound`), `held` claimed-but-unrecorded. */
function setup(opts: Partial<AdmissionOptions> = {}, bound = 2_000) {
  const held = new Map<string, number>();
  const bounds = new Map<string, number>();
  const boundOf = (key: string) => bounds.get(key) ?? bound;
  const backlog = () => [...held.values()].reduce((a, b) => a + b, 0);
  const admission = new Admission(
    { dispatchBacklog: backlog, queueRoom: (key) => boundOf(key) - (held.get(key) ?? 0), queueBound: boundOf },
    { ...OPTS, ...opts },
  );
  /** A claim of these refs went out and the store took them all: the dispatcher holds them. */
  const claim = (taken: DueRef[]) => {
    admission.claimEnded(admission.claimStarted(taken));
    for (const r of taken)
      held.set(queueKeyOf(r.tenantId, r.queue), (held.get(queueKeyOf(r.tenantId, r.queue)) ?? 0) + 1);
  };
  return { admission, held, bounds, claim, backlog };
}

describe('Admission: isolation between queues', () => {
  it("a flood of 200,000 due refs does not hold back another queue's 100 due in the same ms", () => {
    const { admission, held, claim } = setup();
    for (const r of refs('tb', 'b', 100, T)) assert.ok(admission.admit(r));
    const flood = refs('ta', 'a', 200_000, T);
    let entered = 0;
    for (const r of flood) if (admission.admit(r)) entered++;
    assert.equal(entered, 10_000, 'the flood holds queueRefsMax in memory');
    assert.equal(admission.heldOf(keyA), 10_000);
    assert.equal(admission.overflow.size, 1, "the rest of A's rows stay in the store behind one mark");
    assert.equal(admission.overflow.some(1)[0].from.id, flood[10_000].id, 'the mark is the first row left');

    const first = admission.runOnce(T, 250);
    assert.equal(first.length, 250);
    assert.equal(countIn(first, 'tb'), 100, "all of B's refs are in the first claim");
    assert.equal(countIn(first, 'ta'), 150, 'A fills what B left, after its even share');
    claim(first);
    const second = admission.runOnce(T, 250);
    assert.equal(countIn(second, 'ta'), 250, 'then A alone');
    claim(second);
    assert.equal(held.get(keyB), 100);
  });

  it("B's refs admitted after 10,000 of A's, all due: in one claim within the first three (the line-up moves 5,000 per claim)", () => {
    const { admission, claim } = setup();
    for (const r of refs('ta', 'a', 200_000, T)) admission.admit(r);
    for (const r of refs('tb', 'b', 100, T)) assert.ok(admission.admit(r), 'B has its own memory bound');
    const claims: DueRef[][] = [];
    for (let i = 0; i < 3; i++) {
      const c = admission.runOnce(T, 250);
      claim(c);
      claims.push(c);
    }
    const withB = claims.findIndex((c) => countIn(c, 'tb') > 0);
    assert.ok(withB >= 0 && withB < 3, 'B is claimed within the first three claims');
    assert.equal(countIn(claims[withB], 'tb'), 100, "all of B's refs in that one claim");
    assert.ok(countIn(claims[withB], 'ta') >= 125, 'A keeps its even share of that claim');
  });

  it('each queue with due refs gets an even share of a claim, at least CLAIM_SHARE_MIN', () => {
    const { admission } = setup();
    const queues = ['q0', 'q1', 'q2', 'q3', 'q4'];
    for (const q of queues) for (const r of refs('t', q, 1_000, T)) admission.admit(r);
    const c = admission.runOnce(T, 250);
    assert.equal(c.length, 250);
    for (const q of queues) assert.equal(c.filter((r) => r.queue === `name:${q}`).length, 50, `${q}'s share`);
    const many = setup().admission;
    for (let q = 0; q < 40; q++) for (const r of refs('t', `m${q}`, 100, T)) many.admit(r);
    const c2 = many.runOnce(T, 250);
    const perQueue = new Map<string, number>();
    for (const r of c2) perQueue.set(r.queue, (perQueue.get(r.queue) ?? 0) + 1);
    // More queues than shares: CLAIM_SHARE_MIN each, in turn, until the claim is full (15 × 16 + 10).
    assert.equal(c2.length, 250);
    assert.deepEqual(
      [...perQueue.values()].sort((x, y) => y - x),
      [...Array(15).fill(CLAIM_SHARE_MIN), 10],
    );
  });
});

describe('Admission: room', () => {
  it("a queue is claimed only up to its room; the rest stays parked and another queue's refs go", () => {
    const { admission, bounds, held, claim } = setup();
    bounds.set(keyA, 50);
    for (const r of refs('ta', 'a', 1_000, T)) admission.admit(r);
    for (const r of refs('tb', 'b', 10, T)) admission.admit(r);
    const c = admission.runOnce(T, 250);
    assert.equal(countIn(c, 'ta'), 50, "A's claims stop at its room");
    assert.equal(countIn(c, 'tb'), 10);
    claim(c);
    assert.equal(admission.runOnce(T, 250).length, 0, 'no room: nothing is taken');
    assert.equal(admission.parkedCount, 950, "A's other due refs wait parked, unclaimed");
    held.set(keyA, 30); // the dispatcher recorded 20 of A's: room 20, more than a chunk (50 / 4 = 12)
    assert.equal(admission.runOnce(T, 250).length, 20, 'freed room is taken again, up to the bound');
  });

  it('a backlogged queue waits until its room is a chunk (a quarter of its bound), so claims stay batched', () => {
    const { admission, bounds, held } = setup();
    bounds.set(keyA, 400);
    for (const r of refs('ta', 'a', 1_000, T)) admission.admit(r);
    held.set(keyA, 399);
    assert.equal(admission.runOnce(T, 250).length, 0, 'room 1 with 1,000 lined up: wait');
    held.set(keyA, 300);
    assert.equal(admission.runOnce(T, 250).length, 100, 'room 100 = a chunk: take it');
  });

  it("counts refs in claims in flight against their queue's room and the node's", () => {
    const { admission, bounds } = setup({ dispatchBacklogMax: 300 });
    bounds.set(keyA, 100);
    for (const r of refs('ta', 'a', 1_000, T)) admission.admit(r);
    for (const r of refs('tb', 'b', 1_000, T)) admission.admit(r);
    const first = admission.runOnce(T, 250);
    const keys = admission.claimStarted(first);
    assert.equal(countIn(first, 'ta'), 100);
    const second = admission.runOnce(T, 250);
    assert.equal(countIn(second, 'ta'), 0, 'A claims nothing while its room is in flight');
    assert.equal(second.length, 50, 'the node room left: 300 − 250 in flight');
    admission.claimEnded(keys);
  });

  it("shares the node's own bound among queues in turn when that bound binds", () => {
    const { admission } = setup({ dispatchBacklogMax: 90 }, 1_000);
    for (const q of ['a', 'b', 'c']) for (const r of refs('t', q, 500, T)) admission.admit(r);
    const c = admission.runOnce(T, 250);
    assert.equal(c.length, 90);
    const counts = ['a', 'b', 'c'].map((q) => c.filter((r) => r.queue === `name:${q}`).length);
    assert.ok(
      counts.every((n) => n >= 16),
      `each queue got a share: ${counts.join(', ')}`,
    );
  });

  it('idleQueuesOnly takes only from queues with no claim in flight', () => {
    const { admission } = setup();
    for (const r of refs('ta', 'a', 1_000, T)) admission.admit(r);
    const keys = admission.claimStarted(admission.runOnce(T, 250));
    assert.equal(admission.idleQueueDue(T), false, 'A has a claim in flight');
    for (const r of refs('tb', 'b', 3, T)) admission.admit(r);
    assert.equal(admission.idleQueueDue(T), true, 'B has none and events due');
    const spare = admission.runOnce(T, 250, true);
    assert.deepEqual(
      spare.map((r) => r.tenantId),
      ['tb', 'tb', 'tb'],
    );
    admission.claimEnded(keys);
  });
});

describe('Admission: memory', () => {
  it('marks a full queue and keeps its later rows out until a refill, in due order', () => {
    const { admission } = setup({ queueRefsMax: 100 });
    const a = refs('ta', 'a', 300, T);
    for (const r of a) admission.admit(r);
    assert.equal(admission.heldOf(keyA), 100);
    assert.equal(admission.needsRefill(keyA), false, 'full: no refill');
    admission.runOnce(T, 60);
    assert.equal(admission.needsRefill(keyA), true, 'drained below half, with rows in the store');
    assert.equal(admission.memoryLeftOf(keyA), 60);
    assert.equal(admission.admit(a[250]), false, "a row after the mark waits for the queue's refill (due order)");
    const mark = admission.overflow.take(keyA)!;
    assert.equal(mark.from.id, a[100].id);
    assert.equal(admission.admit(a[100]), true, 'the refill admits from the mark on');
  });

  it('is full at wheelSizeMax over all queues', () => {
    const { admission } = setup({ wheelSizeMax: 150 });
    for (const r of refs('ta', 'a', 100, T)) admission.admit(r);
    assert.equal(admission.memoryFull(), false);
    for (const r of refs('tb', 'b', 50, T)) admission.admit(r);
    assert.equal(admission.memoryFull(), true);
  });

  it('lines up only what is due by now; upsert replaces a held ref in the heap or in its line, forget drops it', () => {
    const { admission } = setup();
    const [early, late] = [refs('ta', 'a', 1, T)[0], { ...refs('ta', 'a', 2, T + 100)[1] }];
    admission.admit(early);
    admission.admit(late);
    assert.deepEqual(admission.runOnce(T - 1, 250), [], 'nothing due yet');
    admission.upsert({ ...late, version: 2 });
    admission.forget(early.tenantId, early.id);
    assert.equal(admission.size, 1);
    assert.deepEqual(
      admission.runOnce(T + 100, 250).map((r) => r.version),
      [2],
    );
    admission.putBack({ ...late, version: 2 });
    admission.putBackIfAbsent({ ...late, version: 1 });
    assert.deepEqual(
      admission.runOnce(T + 100, 250).map((r) => r.version),
      [2],
      'putBackIfAbsent keeps the held one',
    );
  });

  it('splits light queues (all they had due, ≤ CLAIM_SHARE_MIN) from heavy ones', () => {
    const { admission } = setup();
    for (const r of refs('ta', 'a', 1_000, T)) admission.admit(r);
    for (const r of refs('tb', 'b', 5, T)) admission.admit(r);
    const c = admission.runOnce(T, 250);
    const [light, heavy] = admission.splitLight(c);
    assert.deepEqual([countIn(light, 'tb'), light.length], [5, 5]);
    assert.equal(countIn(heavy, 'ta'), heavy.length);
    assert.deepEqual(admission.splitLight(heavy), [heavy], 'one queue: one claim');
  });
});
