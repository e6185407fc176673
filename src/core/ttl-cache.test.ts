import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TtlCache } from './ttl-cache.ts';

function cache(entriesMax = 3, ttlMs = 100) {
  const clock = { ms: 0 };
  return { clock, c: new TtlCache<string, number>({ ttlMs, entriesMax, nowMs: () => clock.ms }) };
}

describe('TtlCache', () => {
  it('answers a value while it is fresh, and not from ttlMs after it was set', () => {
    const { clock, c } = cache();
    c.set('a', 1);
    clock.ms = 99;
    assert.equal(c.get('a'), 1);
    clock.ms = 100;
    assert.equal(c.get('a'), undefined);
    assert.deepEqual(c.peek('a'), { value: 1, fresh: false }, 'peek still tells the last value');
    assert.equal(c.peek('b'), undefined);
  });

  it('holds at most entriesMax, dropping the entry set longest ago', () => {
    const { c } = cache(3);
    c.set('a', 1);
    c.set('b', 2);
    c.set('c', 3);
    c.set('a', 10); // set again: now the newest
    c.set('d', 4);
    assert.equal(c.size, 3);
    assert.deepEqual(
      ['a', 'b', 'c', 'd'].map((k) => c.get(k)),
      [10, undefined, 3, 4],
    );
    c.deleteWhere((v) => v > 3);
    assert.deepEqual(
      ['a', 'c', 'd'].map((k) => c.get(k)),
      [undefined, 3, undefined],
    );
    assert.throws(() => new TtlCache({ ttlMs: 1, entriesMax: 0, nowMs: () => 0 }), RangeError);
  });

  it('loadOnce: callers share one load; a failed load is not kept', async () => {
    const clock = { ms: 0 };
    const c = new TtlCache<string, Promise<number>>({ ttlMs: 100, entriesMax: 10, nowMs: () => clock.ms });
    let loads = 0;
    const ok = () => Promise.resolve(++loads);
    const [x, y] = await Promise.all([TtlCache.loadOnce(c, 'k', ok), TtlCache.loadOnce(c, 'k', ok)]);
    assert.deepEqual([x, y, loads], [1, 1, 1]);
    clock.ms = 100;
    assert.equal(await TtlCache.loadOnce(c, 'k', ok), 2, 'expired: loaded again');
    await assert.rejects(TtlCache.loadOnce(c, 'bad', () => Promise.reject(new Error('down'))));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(c.peek('bad'), undefined, 'the failed load was dropped');
  });

  it('refresh: one read per key at a time; peekRefreshing serves the last value and reads again in the background', async () => {
    const clock = { ms: 0 };
    const c = new TtlCache<string, number>({ ttlMs: 100, entriesMax: 10, nowMs: () => clock.ms });
    let reads = 0;
    let release: (v: number) => void = () => {};
    const load = () => {
      reads++;
      return new Promise<number>((resolve) => (release = resolve));
    };
    assert.equal(c.peekRefreshing('k', load, { readAbsent: false }), undefined);
    assert.equal(reads, 0, 'absent and not asked to read: nothing read');
    assert.equal(c.peekRefreshing('k', load, { readAbsent: true }), undefined);
    const shared = c.refresh('k', load);
    assert.equal(reads, 1, 'the read in flight is shared');
    release(7);
    assert.equal(await shared, 7);
    assert.equal(c.peekRefreshing('k', load, { readAbsent: true }), 7);
    assert.equal(reads, 1, 'fresh: no read');
    clock.ms = 100;
    assert.equal(c.peekRefreshing('k', load, { readAbsent: false }), 7, 'stale: the last value, at once');
    assert.equal(reads, 2);
    release(8);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(c.get('k'), 8);
    await assert.rejects(c.refresh('k', () => Promise.reject(new Error('down'))));
    assert.equal(c.peek('k')?.value, 8, 'a failed read leaves the last value');
  });
});
