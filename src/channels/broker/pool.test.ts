/** ConnectionPool: one connection per destination, reused, replaced on change, closed when forgotten, broken or idle. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from '../../core/clock.ts';
import { TimeoutError } from './attempt.ts';
import { ConnectionPool, PoolFullError } from './pool.ts';

function makePool(clock: SimClock, connectionsMax = 10) {
  const opened: string[] = [];
  const closed: string[] = [];
  const pool = new ConnectionPool<string>({
    clock,
    idleMs: 60_000,
    connectionsMax,
    close: async (c) => void closed.push(c),
  });
  let n = 0;
  const open = (name: string) => async () => {
    const c = `${name}#${++n}`;
    opened.push(c);
    return c;
  };
  const use = (key: string, fp = 'v1') => pool.with(key, fp, open(key), async (c) => c);
  return { pool, opened, closed, use, open };
}

const settle = () => new Promise((r) => setImmediate(r));
const never = () => new Promise<never>(() => {});
/** An attempt's end, as brokerAttempt makes it: rejects when `end` is called. */
function attemptEnd(): { ended: Promise<never>; end(err: Error): void } {
  let end!: (err: Error) => void;
  const ended = new Promise<never>((_, reject) => (end = reject));
  ended.catch(() => {});
  return { ended, end };
}

describe('ConnectionPool', () => {
  it('opens one connection per destination and shares it, even between deliveries that start together', async () => {
    const { pool, opened, use } = makePool(new SimClock());
    const got = await Promise.all([use('a'), use('a'), use('b'), use('a')]);
    assert.deepEqual(got, ['a#1', 'a#1', 'b#2', 'a#1']);
    assert.deepEqual(opened, ['a#1', 'b#2']);
    await pool.closeAll();
  });

  it('replaces the connection when the destination target changes', async () => {
    const { pool, closed, use } = makePool(new SimClock());
    assert.equal(await use('a', 'v1'), 'a#1');
    assert.equal(await use('a', 'v2'), 'a#2');
    await settle();
    assert.deepEqual(closed, ['a#1']);
    await pool.closeAll();
  });

  it('closes a forgotten (deleted) destination and opens anew on its next delivery', async () => {
    const { pool, closed, use } = makePool(new SimClock());
    await use('a');
    pool.drop('a');
    await settle();
    assert.deepEqual(closed, ['a#1']);
    assert.equal(await use('a'), 'a#2');
    await pool.closeAll();
  });

  it('drops a broken connection only if it is still the pooled one', async () => {
    const { pool, closed, use } = makePool(new SimClock());
    await use('a');
    pool.dropIf('a', 'a#0');
    await settle();
    assert.deepEqual(closed, [], 'another connection reported: nothing closes');
    pool.dropIf('a', 'a#1');
    await settle();
    assert.deepEqual(closed, ['a#1']);
    await pool.closeAll();
  });

  it('keeps no failed open: the next delivery tries again', async () => {
    const clock = new SimClock();
    const pool = new ConnectionPool<string>({ clock, close: async () => {} });
    await assert.rejects(
      pool.with(
        'a',
        'v1',
        async () => {
          throw new Error('ECONNREFUSED');
        },
        async (c) => c,
      ),
      /ECONNREFUSED/,
    );
    await settle();
    assert.equal(pool.size, 0);
    assert.equal(
      await pool.with(
        'a',
        'v1',
        async () => 'a#2',
        async (c) => c,
      ),
      'a#2',
    );
    await pool.closeAll();
  });

  it('closes connections idle for idleMs, never one in use', async () => {
    const clock = new SimClock();
    const { pool, closed, use } = makePool(clock);
    await use('idle');
    let release!: () => void;
    const busy = pool.with(
      'busy',
      'v1',
      async () => 'busy#1',
      (c) => new Promise<string>((r) => (release = () => r(c))),
    );
    await settle();
    await clock.advance(60_000);
    pool.sweep();
    await settle();
    assert.deepEqual(closed, ['idle#1']);
    release();
    await busy;
    await clock.advance(59_999);
    pool.sweep();
    await settle();
    assert.deepEqual(closed, ['idle#1'], 'used a moment ago');
    await clock.advance(1);
    pool.sweep();
    await settle();
    assert.deepEqual(closed, ['idle#1', 'busy#1']);
    await pool.closeAll();
  });

  it('past connectionsMax, closes the least recently used idle connection first', async () => {
    const clock = new SimClock();
    const { pool, closed, use } = makePool(clock, 2);
    await use('a');
    await clock.advance(10);
    await use('b');
    await clock.advance(10);
    await use('a');
    await use('c');
    await settle();
    assert.deepEqual(closed, ['b#2']);
    assert.equal(pool.size, 2);
    await pool.closeAll();
  });

  it('lets a delivery go when its attempt times out, though the broker never answers, and closes that connection', async () => {
    const clock = new SimClock();
    const { pool, closed, open } = makePool(clock);
    const { ended, end } = attemptEnd();
    const hung = pool.with('a', 'v1', open('a'), never, ended);
    await settle();
    end(new TimeoutError(100));
    await assert.rejects(hung, TimeoutError);
    await settle();
    assert.deepEqual(closed, ['a#1'], 'a connection whose send timed out is closed');
    assert.equal(pool.size, 0);
    assert.equal(await pool.with('a', 'v1', open('a'), async (c) => c), 'a#2', 'the next delivery opens anew');
    await pool.closeAll();
  });

  it('keeps the connection when an attempt is aborted (shutdown), not timed out', async () => {
    const { pool, closed, open } = makePool(new SimClock());
    const { ended, end } = attemptEnd();
    const hung = pool.with('a', 'v1', open('a'), never, ended);
    await settle();
    end(new Error('aborted'));
    await assert.rejects(hung, /aborted/);
    await settle();
    assert.deepEqual(closed, []);
    assert.equal(pool.size, 1);
    await pool.closeAll();
  });

  it('lets deliveries waiting for an open go at their end, and gives the open up after openTimeoutMs, aborting it', async () => {
    const pool = new ConnectionPool<string>({ clock: new SimClock(), openTimeoutMs: 50, close: async () => {} });
    let signal!: AbortSignal;
    const opening = (s: AbortSignal) => {
      signal = s;
      return never();
    };
    const waits = [attemptEnd(), attemptEnd(), attemptEnd()];
    const deliveries = waits.map((w) => pool.with('a', 'v1', opening, async (c) => c, w.ended));
    for (const w of waits) w.end(new TimeoutError(10));
    for (const d of deliveries) await assert.rejects(d, TimeoutError);
    assert.equal(pool.size, 1, 'the open goes on for the next deliveries');
    const late = pool.with('a', 'v1', opening, async (c) => c);
    await assert.rejects(late, /longer than 50ms/);
    assert.equal(signal.aborted, true, 'the open was told to give up (its socket destroyed)');
    assert.equal(pool.size, 0);
    await pool.closeAll();
  });

  it('aborts an open still running when its destination is dropped, and closes a connection that opened too late', async () => {
    const closed: string[] = [];
    const pool = new ConnectionPool<string>({ clock: new SimClock(), close: async (c) => void closed.push(c) });
    let signal!: AbortSignal;
    let finish!: (c: string) => void;
    const d = pool.with(
      'a',
      'v1',
      (s) => {
        signal = s;
        return new Promise<string>((r) => (finish = r));
      },
      async (c) => c,
    );
    await settle();
    pool.drop('a');
    await assert.rejects(d, /connection closed/);
    assert.equal(signal.aborted, true);
    finish('a#late');
    await settle();
    assert.deepEqual(closed, ['a#late']);
    await pool.closeAll();
  });

  it('sees a connection whose sends hung as idle once their attempts ended: the sweep closes it', async () => {
    const clock = new SimClock();
    const { pool, closed, open } = makePool(clock);
    const { ended, end } = attemptEnd();
    const hung = pool.with('a', 'v1', open('a'), never, ended);
    await settle();
    end(new Error('aborted'));
    await assert.rejects(hung);
    await clock.advance(60_000);
    pool.sweep();
    await settle();
    assert.deepEqual(closed, ['a#1']);
    await pool.closeAll();
  });

  it('at connectionsMax with every connection in use, refuses a new destination instead of opening past the bound', async () => {
    const clock = new SimClock();
    const { pool, opened, open } = makePool(clock, 2);
    const ends = [attemptEnd(), attemptEnd()];
    const busy = ['a', 'b'].map((k, i) => pool.with(k, 'v1', open(k), never, ends[i].ended));
    await settle();
    await assert.rejects(
      pool.with('c', 'v1', open('c'), async (c) => c),
      PoolFullError,
    );
    assert.deepEqual(opened, ['a#1', 'b#2']);
    for (const e of ends) e.end(new Error('aborted'));
    await Promise.allSettled(busy);
    assert.equal(
      await pool.with('c', 'v1', open('c'), async (c) => c),
      'c#3',
      'idle again: the least recent one makes room',
    );
    assert.equal(pool.size, 2);
    await pool.closeAll();
  });
});
