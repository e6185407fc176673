import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newSortableId } from './ids.ts';

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
