import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GROUP_COMMIT_PAYLOAD_BYTES_MAX, GroupCommitter, WriteQueueFullError } from './group-commit.ts';
import { openSqliteStore } from './sqlite/sqlite-store.ts';
import { newEvent, newTenant } from './conformance/fixtures.ts';
import type { EventInsertManyParams, EventInsertResult, NewEvent, Store } from './store.ts';

describe('GroupCommitter', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'belfry-gc-'));
  const store = await openSqliteStore({ dataDir: dir });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commits concurrent inserts in one transaction and answers each after it, in order', async () => {
    const tenant = await newTenant(store);
    const calls: number[] = [];
    const committed = new Set<string>();
    const counting = {
      eventInsertMany: async (params: EventInsertManyParams) => {
        calls.push(params.events.length);
        const results = await store.eventInsertMany(params);
        for (const e of params.events) committed.add(e.id);
        return results;
      },
    };
    const gc = new GroupCommitter(counting, () => Date.now());
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        gc.insert([newEvent(tenant, `gc-${i}`)]).then((r) => {
          // Each caller hears back only once its event is committed.
          assert.ok(committed.has(`gc-${i}`));
          return r;
        }),
      ),
    );
    assert.deepEqual(calls, [200]);
    answers.forEach((r, i) => {
      assert.equal(r.length, 1);
      assert.equal(r[0].kind, 'created');
      assert.equal(r[0].event.id, `gc-${i}`);
    });
  });

  it('bounds a transaction and keeps requests whole', async () => {
    const tenant = await newTenant(store);
    const calls: number[] = [];
    const gc = new GroupCommitter(
      { eventInsertMany: (p) => (calls.push(p.events.length), store.eventInsertMany(p)) },
      () => Date.now(),
      { batchEventsMax: 250 },
    );
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        gc.insert(Array.from({ length: 100 }, (_, j) => newEvent(tenant, `b-${i}-${j}`))),
      ),
    );
    assert.ok(
      calls.every((n) => n <= 250 && n % 100 === 0),
      `batches ${calls}`,
    );
    assert.equal(
      calls.reduce((a, b) => a + b, 0),
      1_000,
    );
  });

  it('bounds a transaction in payload bytes (UTF-8, not characters); a request larger than the bound goes alone', async () => {
    const tenant = await newTenant(store);
    const calls: { ids: string[]; payloadBytes: number }[] = [];
    const recording = {
      eventInsertMany: (p: EventInsertManyParams) => {
        calls.push({
          ids: p.events.map((e) => e.id),
          payloadBytes: p.events.reduce((sum, e) => sum + Buffer.byteLength(e.payload), 0),
        });
        return store.eventInsertMany(p);
      },
    };
    const gc = new GroupCommitter(recording, () => Date.now(), { transactionPayloadBytesMax: 1_000 });
    // All in the same turn: without the bound in bytes they would share one transaction.
    const answers = await Promise.all([
      gc.insert(events(tenant, 'a', 2, 300)), // 600 bytes
      gc.insert(events(tenant, 'b', 1, 300)), // 900 with a
      gc.insert(events(tenant, 'c', 1, 300)), // 1,200 with a and b: the next transaction
      gc.insert(events(tenant, 'd', 3, 1_000)), // 3,000 bytes, more than the bound: alone
      gc.insert(eventsOf(tenant, 'e', 1, 'é'.repeat(200))), // 200 characters, 402 bytes
      gc.insert(eventsOf(tenant, 'f', 1, 'é'.repeat(200))), // 804 bytes with e: together
      gc.insert(eventsOf(tenant, 'g', 1, 'é'.repeat(200))), // 1,206 with e and f: the next one
    ]);
    assert.deepEqual(
      calls.map((c) => c.ids),
      [['a-0', 'a-1', 'b-0'], ['c-0'], ['d-0', 'd-1', 'd-2'], ['e-0', 'f-0'], ['g-0']],
    );
    assert.deepEqual(
      calls.map((c) => c.payloadBytes),
      [900, 300, 3_000, 804, 402],
    );
    assert.ok(answers.flat().every((r) => r.kind === 'created'));
    assert.deepEqual(
      answers.map((r) => r.length),
      [2, 1, 1, 3, 1, 1, 1],
    );
  });

  it('by default merges up to 4 MiB of payloads in one transaction', async () => {
    assert.equal(GROUP_COMMIT_PAYLOAD_BYTES_MAX, 4 * 1024 * 1024);
    const tenant = await newTenant(store);
    const calls: number[] = [];
    const gc = new GroupCommitter(
      { eventInsertMany: (p) => (calls.push(p.events.length), store.eventInsertMany(p)) },
      () => Date.now(),
    );
    // Ten requests of 1 MiB of payloads (four events of 256 KiB each): four per transaction.
    await Promise.all(Array.from({ length: 10 }, (_, i) => gc.insert(events(tenant, `m${i}`, 4, 256 * 1024))));
    assert.deepEqual(calls, [16, 16, 8]);
  });

  it('rejects every caller of a failed transaction', async () => {
    const gc = new GroupCommitter({ eventInsertMany: async () => Promise.reject(new Error('disk full')) }, () =>
      Date.now(),
    );
    const results = await Promise.allSettled([gc.insert([]), gc.insert([])]);
    assert.ok(results.every((r) => r.status === 'rejected' && /disk full/.test(String(r.reason))));
  });

  it('refuses at once what does not fit the queue, in events, while the store is slow; takes it again once drained', async () => {
    const tenant = await newTenant(store);
    const gate = slowStore(store);
    let rejectedCount = 0;
    // One transaction in flight: the second would take the queue at once (the next test shows two).
    const gc = new GroupCommitter(gate, () => Date.now(), {
      flushesInFlightMax: 1,
      queueEventsMax: 300,
      onRejected: () => rejectedCount++,
    });
    const inFlight = gc.insert(events(tenant, 'q0', 100));
    await gate.started(1);
    const queued = [gc.insert(events(tenant, 'q1', 200)), gc.insert(events(tenant, 'q2', 100))];
    assert.equal(gc.pendingEvents, 300);
    await assert.rejects(gc.insert(events(tenant, 'q3', 1)), WriteQueueFullError);
    assert.equal(rejectedCount, 1);
    assert.equal(gc.pendingEvents, 300, 'a refused insert takes no room');
    gate.open();
    for (const results of await Promise.all([inFlight, ...queued]))
      assert.ok(results.every((r) => r.kind === 'created'));
    assert.equal(gc.pendingEvents, 0);
    assert.equal((await gc.insert(events(tenant, 'q4', 1)))[0].kind, 'created');
  });

  it('keeps two transactions in flight, no more, and answers each caller after its own', async () => {
    const tenant = await newTenant(store);
    const gate = slowStore(store);
    const gc = new GroupCommitter(gate, () => Date.now());
    const first = gc.insert(events(tenant, 'f0', 10));
    await gate.started(1);
    const second = gc.insert(events(tenant, 'f1', 20));
    // The second transaction goes while the first is still in the store.
    await gate.started(2);
    const third = gc.insert(events(tenant, 'f2', 30));
    for (let turn = 0; turn < 10; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(gate.calls(), 2, 'a third transaction waits for one of the two');
    assert.equal(gc.pendingEvents, 30);
    gate.open();
    const [a, b, c] = await Promise.all([first, second, third]);
    assert.deepEqual([a.length, b.length, c.length], [10, 20, 30]);
    assert.ok([...a, ...b, ...c].every((r) => r.kind === 'created'));
    assert.deepEqual(
      c.map((r) => r.event.id),
      events(tenant, 'f2', 30).map((e) => e.id),
    );
    assert.equal(gate.calls(), 3);
    assert.equal(gc.pendingEvents, 0);
  });

  it('bounds the queue in payload characters too, and always takes an insert into an empty queue', async () => {
    const tenant = await newTenant(store);
    const gate = slowStore(store);
    const gc = new GroupCommitter(gate, () => Date.now(), {
      flushesInFlightMax: 1,
      queueEventsMax: 10,
      queuePayloadCharsMax: 1_000,
    });
    // Bigger than either bound, but the queue is empty: it goes (else it could never go).
    const big = gc.insert(events(tenant, 'p0', 20, 100));
    await gate.started(1);
    const queued = [gc.insert(events(tenant, 'p1', 1, 600)), gc.insert(events(tenant, 'p2', 1, 300))];
    // 3 events of 10, but 1,100 payload characters of 1,000.
    await assert.rejects(gc.insert(events(tenant, 'p3', 1, 200)), WriteQueueFullError);
    gate.open();
    assert.equal((await big).length, 20);
    for (const results of await Promise.all(queued)) assert.equal(results[0].kind, 'created');
  });
});

/** `n` events with ids `<prefix>-<i>` and payloads of `payloadChars` characters. */
function events(tenant: string, prefix: string, n: number, payloadChars = 2): NewEvent[] {
  return Array.from({ length: n }, (_, i) => ({
    ...newEvent(tenant, `${prefix}-${i}`),
    payload: JSON.stringify('x'.repeat(payloadChars - 2)),
  }));
}

/** `n` events with ids `<prefix>-<i>` whose payload is the JSON string `text`. */
function eventsOf(tenant: string, prefix: string, n: number, text: string): NewEvent[] {
  return Array.from({ length: n }, (_, i) => ({
    ...newEvent(tenant, `${prefix}-${i}`),
    payload: JSON.stringify(text),
  }));
}

/** A store whose inserts wait until `open()`: a disk or a primary that has fallen behind. */
function slowStore(real: Pick<Store, 'eventInsertMany'>) {
  let release!: () => void;
  const opened = new Promise<void>((resolve) => (release = resolve));
  let calls = 0;
  return {
    async eventInsertMany(params: EventInsertManyParams): Promise<EventInsertResult[]> {
      calls++;
      await opened;
      return real.eventInsertMany(params);
    },
    open: () => release(),
    calls: () => calls,
    /** Resolves once `n` inserts reached the store; rejects after a bounded number of turns. */
    async started(n: number): Promise<void> {
      for (let turn = 0; turn < STORE_WAIT_TURNS_MAX; turn++) {
        if (calls >= n) return;
        await new Promise((resolve) => setImmediate(resolve));
      }
      throw new Error(`${n} inserts did not reach the store within ${STORE_WAIT_TURNS_MAX} turns of the event loop`);
    },
  };
}

/** A flush starts on the next turn after an insert: a few turns are plenty. */
const STORE_WAIT_TURNS_MAX = 100;
