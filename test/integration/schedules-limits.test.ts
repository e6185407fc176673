/**
 * Schedules count against their tenant's limits like API creates, on a real in-process node:
 * occurrences beyond the tenant's pendingEventsMax are not made, and those beyond its
 * scheduleRequestsPerSecond do not fire; each is counted missed, with the limit as the reason
 * (`lastMissed`), never dropped silently.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_KEY, startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';

let node: TestNode;
let rx: Receiver;

before(async () => {
  rx = await startReceiver();
  node = await startTestNode();
  assert.equal((await node.api('PUT', '/v1/destinations/rx', { url: rx.url })).status, 201);
  // The quota admits what a tenant asks for before the node's first count of pending events.
  await waitUntil('the first count of pending events', () => node.node.counts.latest() !== null, 10_000, 20);
});
after(async () => {
  await node?.close();
  await rx?.close();
});

const setLimits = async (limits: Record<string, unknown>) => {
  const res = await node.api('PATCH', `/v1/tenants/${node.tenantId}`, { limits }, ADMIN_KEY);
  assert.equal(res.status, 200, JSON.stringify(res.body));
};
const of = (id: string) => rx.requests.filter((r) => String(r.headers['webhook-id']).startsWith(`${id}@`));

describe("schedules under their tenant's limits", () => {
  it('makes no occurrence past pendingEventsMax: each is counted missed with the quota as the reason', async () => {
    await setLimits({ pendingEventsMax: 0 });
    assert.equal((await node.api('POST', '/v1/schedules', { id: 'full', every: '1s', destination: 'rx' })).status, 201);
    let s: { missedCount: number; lastMissed: { reason: string; count: number } | null } = {
      missedCount: 0,
      lastMissed: null,
    };
    await waitUntil(
      'occurrences counted missed',
      async () => {
        s = (await node.api('GET', '/v1/schedules/full')).body;
        return s.missedCount >= 3;
      },
      10_000,
      100,
    );
    assert.match(s.lastMissed?.reason ?? '', /pendingEventsMax/);
    assert.equal((await node.api('GET', '/v1/events?schedule=full')).body.events.length, 0, 'nothing made');
    assert.equal(of('full').length, 0, 'nothing delivered');
    assert.equal((await node.api('DELETE', '/v1/schedules/full')).status, 200);
  });

  it('fires no more occurrences than scheduleRequestsPerSecond: the others are canceled, counted missed with the rate as the reason', async () => {
    await setLimits({ pendingEventsMax: null, scheduleRequestsPerSecond: 1 });
    const startAt = Math.ceil((Date.now() + 1_500) / 1_000) * 1_000;
    for (const id of ['r1', 'r2', 'r3'])
      assert.equal(
        (await node.api('POST', '/v1/schedules', { id, every: '1s', startAt, destination: 'rx' })).status,
        201,
      );
    await waitUntil(
      '4 s of occurrences',
      () => ['r1', 'r2', 'r3'].reduce((n, id) => n + of(id).length, 0) >= 4,
      15_000,
      50,
    );
    const end = startAt + 4_000;
    await waitUntil('the clock past the 4 s', () => Date.now() > end + 2_000, 10_000, 100);
    const delivered = ['r1', 'r2', 'r3'].map(
      (id) => of(id).filter((r) => Date.parse(String(r.headers['webhook-id']).split('@')[1]) < end).length,
    );
    const total = delivered.reduce((a, b) => a + b, 0);
    // 12 occurrences in those 4 s; the bucket holds one second of the rate (1), refilled at 1/s.
    assert.ok(total <= 5, `at most about 1 per second fired: ${delivered.join(' + ')} = ${total}`);
    let missed = 0;
    let reasons: string[] = [];
    await waitUntil(
      'the refused ones counted missed',
      async () => {
        const all = await Promise.all(
          ['r1', 'r2', 'r3'].map(async (id) => (await node.api('GET', `/v1/schedules/${id}`)).body),
        );
        missed = all.reduce((n, s) => n + s.missedCount, 0);
        reasons = all.map((s) => s.lastMissed?.reason ?? '');
        return missed >= 12 - total - 3;
      },
      10_000,
      100,
    );
    assert.ok(
      reasons.some((r) => /scheduleRequestsPerSecond/.test(r)),
      `a reason names the rate: ${reasons.join(' | ')}`,
    );
    const canceled = (await node.api('GET', '/v1/events?schedule=r1&state=canceled')).status;
    assert.equal(canceled, 400, 'schedule lists take no other filter (the reason is on each canceled event)');
  });
});
