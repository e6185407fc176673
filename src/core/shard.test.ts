import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fnv1a32, shardOf } from './shard.ts';

describe('shardOf', () => {
  it('is stable across releases (pinned values)', () => {
    assert.equal(fnv1a32(''), 0x811c9dc5);
    assert.equal(fnv1a32('a'), 0xe40c292c);
  });
  it('keeps a group in one shard and spreads ids evenly', () => {
    const counts = new Array(256).fill(0);
    for (let i = 0; i < 256_00; i++) counts[shardOf('tenant-1', `event-${i}`)]++;
    assert.ok(Math.min(...counts) > 50 && Math.max(...counts) < 160, `uneven: ${Math.min(...counts)}..${Math.max(...counts)}`);
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
