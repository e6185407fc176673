/**
 * The read-ahead alone, on a SimClock and a store played by the test (eventListDue as SQLite
 * answers it: keyset order (dueAt, tenantId, id); with `skip`, the rows examined that are not
 * skipped, then the last row examined; with `queue`, one queue's rows from a mark). What it reads,
 * how often, and what enters admission.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { SimClock } from '../core/clock.ts';
import type { EventRecord } from '../core/event.ts';
import { queueKeyOf } from '../core/queue.ts';
import type { DueRef, EventListDueParams, Store } from '../store/store.ts';
import { Admission, type AdmissionOptions } from './admission.ts';
import { ReadAhead, type ReadAheadOptions } from './read-ahead.ts';

const T = Date.UTC(2026, 5, 1, 12, 0, 0);
const OPTS: ReadAheadOptions = {
  lookaheadMs: 3_000,
  pollIntervalMs: 250,
  sweepIntervalMs: 2_000,
  sweepGraceMs: 1_000,
  listBatchMax: 2,
  sweepPagesMax: 2,
};

const ref = (tenantId: string, id: string, dueAt: number, queue = 'name:d', extra: Partial<DueRef> = {}): DueRef => ({
  tenantId,
  id,
  version: 1,
  dueAt,
  shard: 0,
  group: null,
  queue,
  ...extra,
});

const before = (a: DueRef, b: { dueAt: number; tenantId: string; id: string }) =>
  a.dueAt - b.dueAt || a.tenantId.localeCompare(b.tenantId) || a.id.localeCompare(b.id);
const atOrAfter = (r: DueRef, from: { dueAt: number; id: string }) =>
  r.dueAt > from.dueAt || (r.dueAt === from.dueAt && r.id >= from.id);

/** The store's due index, as the read-ahead reads it, with every call recorded. */
class FakeStore {
  rows: DueRef[] = [];
  calls: EventListDueParams[] = [];
  heads = new Map<string, DueRef>();

  async eventListDue(p: EventListDueParams): Promise<DueRef[]> {
    this.calls.push(p);
    const due = this.rows
      .filter((r) => r.dueAt <= p.untilMs && (p.shards === null || p.shards.includes(r.shard)))
      .sort(before);
    if (p.queue) {
      const q = p.queue;
      return due
        .filter((r) => r.tenantId === q.tenantId && r.queue === q.queue && (q.from === null || atOrAfter(r, q.from)))
        .slice(0, p.limit);
    }
    const examined = due.filter((r) => p.after === null || before(r, p.after) > 0).slice(0, p.limit);
    const skipped = (r: DueRef) =>
      (p.skip ?? []).some((s) => s.tenantId === r.tenantId && s.queue === r.queue && atOrAfter(r, s.from));
    const sent = examined.filter((r) => !skipped(r));
    const last = examined.at(-1);
    return last && skipped(last) ? [...sent, last] : sent;
  }

  async eventGroupHead(p: { tenantId: string; group: string }): Promise<DueRef | null> {
    return this.heads.get(`${p.tenantId}/${p.group}`) ?? null;
  }
}

function setup(opts: Partial<ReadAheadOptions> = {}, admissionOpts: Partial<AdmissionOptions> = {}) {
  const clock = new SimClock(T);
  const store = new FakeStore();
  const admission = new Admission(
    { dispatchBacklog: () => 0 },
    { wheelSizeMax: 500_000, queueRefsMax: 10_000, dispatchBacklogMax: 20_000, ...admissionOpts },
  );
  const seen = { passes: 0, admitted: 0, dueSoon: [] as string[][] };
  let running = true;
  let shards: number[] | null = null;
  const readAhead = new ReadAhead(
    {
      store: store as unknown as Store,
      clock,
      logger: pino({ level: 'silent' }),
      admission,
      shards: () => shards,
      isRunning: () => running,
      onDueSoon: (queues) => seen.dueSoon.push([...queues.keys()].sort()),
      onAdmitted: () => seen.admitted++,
      onPassEnded: () => seen.passes++,
    },
    { ...OPTS, ...opts },
  );
  return {
    clock,
    store,
    admission,
    readAhead,
    seen,
    stop: () => (running = false),
    own: (s: number[] | null) => (shards = s),
  };
}

describe('ReadAhead', () => {
  it('pages until a page comes back short, and reads each row once (a keyset cursor)', async () => {
    const { store, admission, readAhead, seen } = setup();
    store.rows = [
      ref('t', 'a', T + 100),
      ref('t', 'b', T + 200),
      ref('t', 'c', T + 300),
      ref('u', 'd', T + 300, 'name:e'),
      ref('t', 'e', T + 400),
    ];
    assert.deepEqual(await readAhead.runOnce(), { loaded: 5 });
    assert.equal(admission.size, 5);
    const paged = store.calls.filter((c) => c.after !== null || c.skip !== undefined);
    assert.deepEqual(
      paged.map((c) => c.after?.id ?? null),
      [null, 'b', 'd'],
      'three pages of two, each after the last',
    );
    assert.deepEqual(seen.dueSoon, [
      [queueKeyOf('t', 'name:d')],
      [queueKeyOf('t', 'name:d'), queueKeyOf('u', 'name:e')],
      [queueKeyOf('t', 'name:d')],
    ]);
    assert.equal(seen.passes, 1);
    store.calls = [];
    assert.deepEqual(await readAhead.runOnce(), { loaded: 0 });
    assert.deepEqual(
      store.calls.map((c) => c.after?.id),
      ['e'],
      'the next pass reads after the last row loaded',
    );
  });

  it('loads only what is due within the look-ahead', async () => {
    const { clock, store, admission, readAhead } = setup();
    store.rows = [ref('t', 'soon', T + 2_000), ref('t', 'later', T + 5_000)];
    await readAhead.runOnce();
    assert.equal(admission.size, 1);
    await clock.advance(2_000);
    await readAhead.runOnce();
    assert.equal(admission.size, 2);
  });

  it('stops paging when memory is full', async () => {
    const { store, admission, readAhead } = setup({}, { wheelSizeMax: 3 });
    store.rows = Array.from({ length: 10 }, (_, i) => ref('t', `e${i}`, T + i));
    await readAhead.runOnce();
    assert.equal(admission.size, 4, 'the page that filled memory, no more');
    assert.equal(
      store.calls.filter((c) => c.skip !== undefined).length,
      2,
      'two pages (after a sweep that found nothing)',
    );
  });

  it('leaves a flooded queue in the store (skip), reads the others past it, refills it from its own index', async () => {
    const { store, admission, readAhead } = setup({ listBatchMax: 4 }, { queueRefsMax: 6 });
    const flood = Array.from({ length: 20 }, (_, i) => ref('a', `a${String(i).padStart(2, '0')}`, T + 10));
    store.rows = [...flood, ref('b', 'b0', T + 20), ref('b', 'b1', T + 30)];
    await readAhead.runOnce();
    const keyA = queueKeyOf('a', 'name:d');
    assert.equal(admission.heldOf(keyA), 6);
    assert.equal(admission.heldOf(queueKeyOf('b', 'name:d')), 2, "B's rows are read past the flood");
    assert.equal(admission.overflow.some(1)[0].from.id, 'a06', "the mark is A's first row left");
    const skipped = store.calls.filter((c) => (c.skip ?? []).length > 0);
    assert.ok(skipped.length > 0 && skipped.every((c) => c.skip![0].from.id === 'a06'), 'later pages leave A out');
    assert.ok(skipped.every((c) => c.limit === 4));

    store.calls = [];
    readAhead.refillDrained();
    assert.equal(store.calls.length, 0, 'A holds more than half of its bound: no refill');
    admission.runOnce(T + 10, 4);
    readAhead.refillDrained();
    readAhead.refillDrained();
    assert.equal(store.calls.length, 1, 'one read per queue at a time');
    assert.deepEqual(store.calls[0].queue, { tenantId: 'a', queue: 'name:d', from: { dueAt: T + 10, id: 'a06' } });
    assert.equal(store.calls[0].limit, 4, "the queue's free share of memory, at most a page");
    await new Promise((r) => setImmediate(r));
    assert.equal(admission.heldOf(keyA), 6);
    assert.equal(
      admission.overflow.some(1)[0].from.id,
      'a09',
      'a full refill page leaves its last row as the next mark',
    );
  });

  it('sweeps overdue rows behind the cursor, a bounded number of pages per interval, continuing where it stopped', async () => {
    const { clock, store, admission, readAhead } = setup({ lookaheadMs: 100 });
    store.rows = [ref('t', 'ahead', T + 50)];
    await readAhead.runOnce(); // the cursor is past every row written below
    store.rows.push(...Array.from({ length: 9 }, (_, i) => ref('t', `old${i}`, T - 10_000 + i)));
    await clock.advance(250);
    store.calls = [];
    await readAhead.runOnce();
    assert.equal(admission.size, 1, 'no sweep before its interval');
    await clock.advance(2_000);
    store.calls = [];
    await readAhead.runOnce();
    const sweeps = store.calls.filter((c) => c.skip === undefined);
    assert.deepEqual(
      sweeps.map((c) => c.after?.id ?? null),
      [null, 'old1'],
      'two pages of two',
    );
    assert.equal(admission.size, 5);
    // The sweep reads only rows due before the earliest held (those behind it wait anyway):
    // claim them (claimed rows are no longer fireable in the store).
    const claim = () => {
      const taken = new Set(admission.runOnce(clock.now(), 100).map((r) => r.id));
      store.rows = store.rows.filter((r) => !taken.has(r.id));
      return taken.size;
    };
    let claimed = claim();
    for (let i = 0; i < 2; i++) {
      await clock.advance(2_000);
      await readAhead.runOnce();
      claimed += claim();
    }
    assert.equal(claimed, 10, 'later sweeps went on from where the last stopped');
  });

  it('restart reads from the start again, sweep included', async () => {
    const { store, readAhead } = setup();
    store.rows = [ref('t', 'a', T + 100)];
    await readAhead.runOnce();
    readAhead.restart();
    store.calls = [];
    await readAhead.runOnce();
    assert.deepEqual(
      store.calls.map((c) => c.after),
      [null, null],
      'a sweep and a page from the start',
    );
  });
});

describe('ReadAhead notifications', () => {
  const event = (id: string, dueAt: number, extra: Partial<EventRecord> = {}) =>
    ({
      tenantId: 't',
      id,
      version: 2,
      dueAt,
      shard: 0,
      group: null,
      queue: 'name:d',
      state: 'scheduled',
      ...extra,
    }) as EventRecord;

  it('takes fireable events due within the look-ahead on owned shards; drops the others', () => {
    const { admission, readAhead, seen, own } = setup();
    readAhead.notifyEvents([event('soon', T + 1_000), event('far', T + 5_000)]);
    assert.equal(admission.size, 1);
    readAhead.notifyEvents([event('soon', T + 1_000, { state: 'canceled' })]);
    assert.equal(admission.size, 0, 'a cancel takes it out');
    own([1]);
    readAhead.notifyDue([ref('t', 'r', T + 10)]);
    assert.equal(admission.size, 0, 'shard 0 is not owned');
    assert.equal(seen.admitted, 3, 'each notification arms the timer');
  });

  it("kicks a group when one of its events became terminal: the group's next head comes in", async () => {
    const { store, admission, readAhead } = setup();
    store.heads.set('t/g', ref('t', 'next', T + 10, 'name:d', { group: 'g' }));
    readAhead.notifyEvents([event('first', T, { group: 'g', state: 'canceled' })]);
    await new Promise((r) => setImmediate(r));
    assert.equal(admission.size, 1);
    assert.equal(admission.runOnce(T + 10, 10)[0].id, 'next');
  });

  it('ignores notifications once stopped', () => {
    const { admission, readAhead, stop } = setup();
    stop();
    readAhead.notifyDue([ref('t', 'r', T + 10)]);
    readAhead.notifyEvents([event('e', T + 10)]);
    assert.equal(admission.size, 0);
  });
});
