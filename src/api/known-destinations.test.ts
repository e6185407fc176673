/** KnownDestinations: found destinations are kept for TTL_MS, missing ones never; forget drops one; the cache is bounded. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SimClock } from '../core/clock.ts';
import type { DestinationRecord } from '../store/store.ts';
import { KNOWN_DESTINATIONS_MAX, KNOWN_DESTINATIONS_TTL_MS, KnownDestinations } from './known-destinations.ts';

function fakeStore(names: Set<string>) {
  const reads: string[] = [];
  return {
    reads,
    async destinationGet({ tenantId, name }: { tenantId: string; name: string }): Promise<DestinationRecord | null> {
      reads.push(name);
      return names.has(name) ? ({ tenantId, name } as DestinationRecord) : null;
    },
  };
}

describe('KnownDestinations', () => {
  it('keeps a found destination for its TTL, then reads it again', async () => {
    const clock = new SimClock(Date.UTC(2026, 0, 1));
    const store = fakeStore(new Set(['a']));
    const known = new KnownDestinations(store, clock);
    assert.equal((await known.destinationGet({ tenantId: 't', name: 'a' }))?.name, 'a');
    await known.destinationGet({ tenantId: 't', name: 'a' });
    assert.deepEqual(store.reads, ['a']);
    await clock.advance(KNOWN_DESTINATIONS_TTL_MS);
    await known.destinationGet({ tenantId: 't', name: 'a' });
    assert.deepEqual(store.reads, ['a', 'a']);
  });

  it('never keeps a missing destination, and forgets one on demand', async () => {
    const clock = new SimClock(Date.UTC(2026, 0, 1));
    const names = new Set<string>();
    const store = fakeStore(names);
    const known = new KnownDestinations(store, clock);
    assert.equal(await known.destinationGet({ tenantId: 't', name: 'b' }), null);
    names.add('b');
    assert.equal(
      (await known.destinationGet({ tenantId: 't', name: 'b' }))?.name,
      'b',
      'created meanwhile: seen at once',
    );
    names.delete('b');
    known.forget('t', 'b');
    assert.equal(await known.destinationGet({ tenantId: 't', name: 'b' }), null);
  });

  it(`holds at most ${KNOWN_DESTINATIONS_MAX} destinations`, async () => {
    const clock = new SimClock(Date.UTC(2026, 0, 1));
    const names = new Set(Array.from({ length: KNOWN_DESTINATIONS_MAX + 1 }, (_, i) => `d${i}`));
    const store = fakeStore(names);
    const known = new KnownDestinations(store, clock);
    for (const name of names) await known.destinationGet({ tenantId: 't', name });
    store.reads.length = 0;
    await known.destinationGet({ tenantId: 't', name: 'd0' });
    assert.deepEqual(store.reads, ['d0'], 'the oldest was dropped');
    await known.destinationGet({ tenantId: 't', name: `d${KNOWN_DESTINATIONS_MAX}` });
    assert.deepEqual(store.reads, ['d0'], 'the newest is kept');
  });
});
