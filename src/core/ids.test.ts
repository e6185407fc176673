import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { newSortableId, sha256Hex } from './ids.ts';

describe('sha256Hex', () => {
  it('is the hex SHA-256 of the UTF-8 text (stored request hashes must not change)', () => {
    for (const text of ['', 'abc', 'é😀\ud800', '{"destination":"rx","id":"b1"}', 'x'.repeat(10_000)]) {
      assert.equal(sha256Hex(text), createHash('sha256').update(text).digest('hex'));
    }
    assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('newSortableId', () => {
  it('is 26 lower-case Crockford characters, the first 10 the milliseconds', () => {
    const id = newSortableId(Date.UTC(2026, 10, 22));
    assert.match(id, /^[0-9a-hjkmnp-tv-z]{26}$/);
    assert.equal(id.slice(0, 10), '01m808tx00');
  });

  it('increases within a millisecond, across milliseconds and when the clock goes back', () => {
    const t = Date.UTC(2027, 0, 1);
    let previous = '';
    for (let i = 0; i < 20_000; i++) {
      const id = newSortableId(t + Math.floor(i / 5_000) - (i % 7_000 === 6_999 ? 3 : 0));
      assert.ok(id > previous, `${id} after ${previous}`);
      previous = id;
    }
  });
});
