/** ConnectionPool: one connection per destination, reused, replaced on change, closed when forgotten, broken or idle. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from '../../core/clock.ts';
import { ConnectionPool } from './pool.ts';

function makePool(clock: SimClock, connectionsMax = 10) {
  const opened: string[] = [];
  const closed: string[] = [];
  const pool = new ConnectionPool<string>({ clock, idleMs: 60_000, connectionsMax, close: async (c) => void closed.push(c) });
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
    await assert.rejects(pool.with('a', 'v1', async () => { throw new Error('ECONNREFUSED'); }, async (c) => c), /ECONNREFUSED/);
    await settle();
    assert.equal(pool.size, 0);
    assert.equal(await pool.with('a', 'v1', async () => 'a#2', async (c) => c), 'a#2');
    await pool.closeAll();
  });

  it('closes connections idle for idleMs, never one in use', async () => {
    const clock = new SimClock();
    const { pool, closed, use } = makePool(clock);
    await use('idle');
    let release!: () => void;
    const busy = pool.with('busy', 'v1', async () => 'busy#1', (c) => new Promise<string>((r) => (release = () => r(c))));
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
});
