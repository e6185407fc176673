/**
 * Group order against members that arrive ahead of the one being delivered: while a slow real
 * receiver holds a group's head, an event created in that group with a fireAt in the past and an
 * edit that moves a queued member into the past both wait until the head is terminal. Then they
 * go in fireAt order, one at a time. On SQLite and on PostgreSQL.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { dropTestSchema, TEST_PG_URL } from '../support/pg.ts';

const HOLD_MS = 400;

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`group order with members created or moved ahead of the head (${backend})`, () => {
    const schema = `belfry_it_${randomBytes(4).toString('hex')}`;
    let t: TestNode | undefined;
    let rx: Receiver | undefined;
    after(async () => {
      await t?.close();
      await rx?.close();
      if (backend === 'postgres') await dropTestSchema(schema);
    });

    it('delivers at most one member of a group at a time, then the waiting ones by fireAt', async () => {
      const inFlight = new Map<string, number>();
      let maxInFlight = 0;
      rx = await startReceiver({
        behavior: (req) => {
          const { group } = req.json as { group: string };
          const n = (inFlight.get(group) ?? 0) + 1;
          inFlight.set(group, n);
          maxInFlight = Math.max(maxInFlight, n);
          // In flight from its arrival until its response is written.
          return { status: 200, delayMs: HOLD_MS, onSend: () => inFlight.set(group, inFlight.get(group)! - 1) };
        },
      });
      t = await startTestNode(backend === 'postgres' ? { store: `${TEST_PG_URL}?schema=${schema}` } : {});
      const api = t.api;
      assert.equal((await api('PUT', '/v1/destinations/slow', { url: rx.url, maxConcurrency: 10 })).status, 201);
      const now = Date.now();
      const create = async (id: string, fireAt: number) => {
        const res = await api('POST', '/v1/events', {
          id,
          group: 'g',
          fireAt,
          destination: 'slow',
          payload: { group: 'g', id },
        });
        assert.equal(res.status, 201, JSON.stringify(res.body));
      };
      await create('queued', now + 3_600_000);
      await create('head', now);
      await rx.waitFor((reqs) => reqs.some((r) => (r.json as { id: string }).id === 'head'), 10_000);
      // The head is being delivered (the receiver holds it): members arrive ahead of it.
      await create('past', now - 60_000);
      const moved = await api('PATCH', '/v1/events/queued', { fireAt: now - 30_000 });
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      await create('past-2', now - 10_000);

      await waitUntil('every member delivered', () => (rx?.requests.length ?? 0) >= 4, 20_000);
      await waitUntil(
        'every member succeeded',
        async () => {
          const list = await api('GET', '/v1/events?group=g&state=succeeded&limit=10');
          return list.body.events.length === 4;
        },
        10_000,
      );
      const order = rx.requests.map((r) => (r.json as { id: string }).id);
      assert.equal(maxInFlight, 1, `members of one group in flight at once: ${maxInFlight}`);
      assert.deepEqual(
        order,
        ['head', 'past', 'queued', 'past-2'],
        'the head first, then the waiting members by fireAt',
      );
      for (let i = 1; i < rx.requests.length; i++) {
        const gap = rx.requests[i].receivedAt - rx.requests[i - 1].receivedAt;
        assert.ok(
          gap >= HOLD_MS,
          `member ${order[i]} arrived ${gap} ms after the previous one, which was held ${HOLD_MS} ms`,
        );
      }
      console.log(`# groups-ahead ${backend}: max in flight per group ${maxInFlight}, order ${order.join(' → ')}`);
    });
  });
}
