import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONNECTIONS_PER_ORIGIN_DEFAULT } from './http-channel.ts';
import { WARM_UP_DELIVERIES, WARM_UP_ROUNDS, warmUp } from './warm-up.ts';

describe('a delivery thread’s warm-up', () => {
  it('makes its rounds of deliveries, all delivered to its own loopback server', async () => {
    assert.deepEqual(await warmUp({ deliveries: 8, rounds: 3, msMax: 60_000 }), { delivered: 24 });
  });

  it('starts no round past its bound: a slow machine stops after the round that passes it', async () => {
    const { delivered } = await warmUp({ deliveries: 4, rounds: 1_000_000, msMax: 1 });
    assert.ok(delivered < 4 * 1_000_000, `${delivered} delivered: the bound ended it, not the rounds`);
    assert.equal(delivered % 4, 0, 'whole rounds only');
  });

  it('opens as many connections in a round as a burst opens to one origin, 1,280 deliveries in all', () => {
    assert.equal(WARM_UP_DELIVERIES, CONNECTIONS_PER_ORIGIN_DEFAULT);
    assert.equal(WARM_UP_DELIVERIES * WARM_UP_ROUNDS, 1_280);
  });
});
