import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { balanceShards, fnv1a32, shardOf } from './shard.ts';

describe('shardOf', () => {
  it('is stable across releases (pinned values)', () => {
    assert.equal(fnv1a32(''), 0x811c9dc5);
    assert.equal(fnv1a32('a'), 0xe40c292c);
  });

  it('is fnv1a32 of tenant, NUL, group or id: stable for the events already stored', () => {
    const names = ['', 'a', 't_01jd9x', 'order-8812', 'é😀\u0000x', 'g'.repeat(200)];
    for (const t of names)
      for (const g of names)
        for (const n of [1, 7, 256, 4096]) assert.equal(shardOf(t, g, n), fnv1a32(`${t}\u0000${g}`) % n);
    assert.equal(shardOf('t_1', 'order-8812'), 21);
  });
  it('keeps a group in one shard and spreads ids evenly', () => {
    const counts = new Array(256).fill(0);
    for (let i = 0; i < 256_00; i++) counts[shardOf('tenant-1', `event-${i}`)]++;
    assert.ok(
      Math.min(...counts) > 50 && Math.max(...counts) < 160,
      `uneven: ${Math.min(...counts)}..${Math.max(...counts)}`,
    );
    assert.equal(shardOf('t', 'g'), shardOf('t', 'g'));
  });
  it('separates tenants', () => {
    let same = 0;
    for (let i = 0; i < 1000; i++) if (shardOf('a', `g${i}`) === shardOf('b', `g${i}`)) same++;
    assert.ok(same < 30);
  });
  it('stays in range for any shard count', () => {
    for (const n of [1, 7, 256, 4096]) for (let i = 0; i < 100; i++) assert.ok(shardOf('t', String(i), n) < n);
  });
});

describe('balanceShards', () => {
  const toMap = (a: (string | null)[]) =>
    new Map(a.flatMap((n, s) => (n === null ? [] : [[s, n] as [number, string]])));
  const counts = (a: (string | null)[]) => {
    const c = new Map<string, number>();
    for (const n of a) if (n !== null) c.set(n, (c.get(n) ?? 0) + 1);
    return c;
  };
  const moved = (before: (string | null)[], after: (string | null)[]) => before.filter((n, s) => n !== after[s]).length;
  const balanced = (a: (string | null)[]) => {
    const c = [...counts(a).values()];
    return Math.max(...c) - Math.min(...c) <= 1;
  };

  it('assigns everything evenly from nothing', () => {
    const a = balanceShards(new Map(), ['n1', 'n2', 'n3'], 256);
    assert.ok(a.every((n) => n !== null));
    assert.ok(balanced(a));
    assert.deepEqual([...counts(a).values()].sort(), [85, 85, 86]);
  });

  it('changes nothing when already balanced', () => {
    const a = balanceShards(new Map(), ['n1', 'n2', 'n3'], 256);
    assert.deepEqual(balanceShards(toMap(a), ['n3', 'n1', 'n2'], 256), a);
  });

  it('moves only the dead node’s shards when a node dies', () => {
    const a = balanceShards(new Map(), ['n1', 'n2', 'n3'], 256);
    const b = balanceShards(toMap(a), ['n1', 'n3'], 256);
    assert.ok(balanced(b));
    assert.equal(moved(a, b), counts(a).get('n2'));
    assert.ok(b.every((n, s) => a[s] === 'n2' || n === a[s]));
  });

  it('moves the fewest shards possible to a new node', () => {
    const a = balanceShards(new Map(), ['n1', 'n2'], 256);
    const b = balanceShards(toMap(a), ['n1', 'n2', 'n3'], 256);
    assert.ok(balanced(b));
    assert.equal(moved(a, b), counts(b).get('n3'));
  });

  it('leaves every shard unowned without live nodes, and handles more nodes than shards', () => {
    assert.ok(balanceShards(new Map([[0, 'x']]), [], 4).every((n) => n === null));
    const a = balanceShards(new Map(), ['a', 'b', 'c', 'd', 'e'], 3);
    assert.equal(new Set(a).size, 3);
  });

  it('stays balanced with minimal moves over a random sequence of joins and deaths', () => {
    let live = ['n0', 'n1', 'n2'];
    let a = balanceShards(new Map(), live, 256);
    let next = 3;
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    for (let step = 0; step < 200; step++) {
      if (live.length > 1 && (rand() < 0.5 || live.length > 12)) {
        const victim = Math.min(live.length - 1, Math.floor(rand() * live.length));
        live = live.filter((_, i) => i !== victim);
      } else {
        live = [...live, `n${next++}`];
      }
      const b = balanceShards(toMap(a), live, 256);
      assert.ok(balanced(b), `step ${step}`);
      assert.ok(b.every((n) => n !== null && live.includes(n)));
      // Every live node keeps at least min(held, floor(S/N)) of its shards: only dead nodes'
      // shards, unassigned ones and a node's excess above floor(S/N) may move.
      const floorQuota = Math.floor(256 / live.length);
      const held = counts(a);
      const allowed =
        a.filter((n) => n === null || !live.includes(n)).length +
        live.reduce((sum, n) => sum + Math.max(0, (held.get(n) ?? 0) - floorQuota), 0);
      assert.ok(moved(a, b) <= allowed, `step ${step}: moved ${moved(a, b)} > ${allowed}`);
      a = b;
    }
  });
});
