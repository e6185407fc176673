/**
 * Groups: events of one group are delivered in (fireAt, creation) order, one at a time, the next
 * only after the previous is terminal, even when the receiver fails at random.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { startTestNode, waitUntil, type TestNode } from '../support/node.ts';

const GROUPS = 50;
const PER_GROUP = 40;

/** Mulberry32: a seeded PRNG, so a failing run can be repeated. */
function prng(seed: number): () => number {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('group order', () => {
  let t: TestNode;
  let rx: Receiver;
  after(async () => {
    await t?.close();
    await rx?.close();
  });

  it(`keeps ${GROUPS} groups × ${PER_GROUP} events in order under random failures`, async () => {
    const seed = Number(process.env.BELFRY_SEED ?? Date.now() % 1_000_000);
    const random = prng(seed);
    const inFlight = new Map<string, number>();
    let overlaps = 0;
    rx = await startReceiver({
      behavior: (req) => {
        const { group } = req.json as { group: string };
        const n = (inFlight.get(group) ?? 0) + 1;
        inFlight.set(group, n);
        if (n > 1) overlaps++;
        const fail = random() < 0.3;
        // In flight from its arrival until its response is written: the next member of the group
        // may be sent only after this answer is recorded, so any overlap at all is a violation.
        return { status: fail ? 503 : 200, delayMs: 3, onSend: () => inFlight.set(group, inFlight.get(group)! - 1) };
      },
    });
    t = await startTestNode();
    await t.api('PUT', '/v1/destinations/d', {
      url: rx.url,
      maxConcurrency: 100,
      retry: { maxAttempts: 50, minBackoff: '10ms', maxBackoff: '40ms' },
    });

    // Creation order within a group is interleaved with other groups; due times collide on purpose.
    const base = Date.now() + 1_000;
    const events = [];
    for (let k = 0; k < PER_GROUP; k++) {
      for (let g = 0; g < GROUPS; g++) {
        events.push({
          id: `g${g}-e${k}`,
          group: `g${g}`,
          fireAt: base + Math.floor(k / 4) * 20,
          destination: 'd',
          payload: { group: `g${g}`, k },
        });
      }
    }
    for (let i = 0; i < events.length; i += 1_000) {
      const res = await t.api('POST', '/v1/events/batch', { events: events.slice(i, i + 1_000) });
      assert.equal(res.status, 200);
    }
    await waitUntil('every event succeeded', async () => (await countSucceeded(t)) === GROUPS * PER_GROUP, 60_000, 200);
    // Per group, the attempts arrive in creation order (a retry repeats k, never goes back), and
    // every event arrived: no later event was tried before an earlier one was done.
    const seen = new Map<string, number[]>();
    for (const req of rx.requests) {
      const { group, k } = req.json as { group: string; k: number };
      const list = seen.get(group) ?? [];
      list.push(k);
      seen.set(group, list);
    }
    for (const [group, ks] of seen) {
      const distinctInArrivalOrder = ks.filter((k, i) => i === 0 || k !== ks[i - 1]);
      assert.deepEqual(
        distinctInArrivalOrder,
        [...Array(PER_GROUP).keys()],
        `group ${group} out of order (seed ${seed}): ${ks.join(',')}`,
      );
    }
    assert.equal(overlaps, 0, `two events of one group were in flight at once (seed ${seed})`);
  });
});

async function countSucceeded(t: TestNode): Promise<number> {
  let n = 0;
  let cursor: string | null = null;
  do {
    const res: any = await t.api(
      'GET',
      `/v1/events?state=succeeded&limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    n += res.body.events.length;
    cursor = res.body.nextCursor;
  } while (cursor);
  return n;
}
