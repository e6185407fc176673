/**
 * A schedule on a real in-process node (SQLite, the real scheduler, dispatcher and materialiser)
 * delivering to a loopback receiver: occurrences arrive once each as `<id>@<time>`, on time, with
 * the counts in /metrics; a pause stops them (the occurrences made are canceled) and a resume
 * with `skip` counts the paused stretch beyond them as missed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { percentile, startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';

let node: TestNode;
let rx: Receiver;
const SEC = 1_000;

before(async () => {
  rx = await startReceiver();
  node = await startTestNode({ scheduleHorizonMs: 2_000 });
});
after(async () => {
  await node?.close();
  await rx?.close();
});

describe('a schedule on a running node', () => {
  it('delivers each occurrence once, on time; pause stops it; resume counts the pause as missed', { timeout: 60_000 }, async () => {
    assert.equal((await node.api('PUT', '/v1/destinations/rx', { url: rx.url })).status, 201);
    const startAt = Math.ceil((Date.now() + 1_000) / SEC) * SEC;
    const created = await node.api('POST', '/v1/schedules', { id: 'beat', every: '1s', startAt, destination: 'rx', payload: { beat: true } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await rx.waitFor((reqs) => reqs.length >= 5, 15_000);
    const ids = rx.requests.map((r) => String(r.headers['webhook-id']));
    assert.equal(new Set(ids).size, ids.length, 'each occurrence once');
    assert.deepEqual(ids.slice(0, 5), [0, 1, 2, 3, 4].map((k) => `beat@${new Date(startAt + k * SEC).toISOString()}`));
    const lateness = rx.requests.map((r) => r.receivedAt - Date.parse(String(r.headers['webhook-id']).slice(5)));
    assert.ok(lateness.every((l) => l >= 0), 'none early');
    console.log(`schedule on a node: lateness p50 ${percentile(lateness, 50)} ms, p99 ${percentile(lateness, 99)} ms (n=${lateness.length})`);
    const metrics = await fetch(`${node.url}/metrics`).then((r) => r.text());
    assert.match(metrics, /belfry_schedule_occurrences_total\{outcome="made"\} \d+/);

    assert.equal((await node.api('PATCH', '/v1/schedules/beat', { paused: true })).status, 200);
    const occ = (await node.api('GET', '/v1/events?schedule=beat&limit=100')).body.events as { state: string }[];
    assert.ok(occ.every((e) => e.state !== 'scheduled'), 'the occurrences made and not fired are canceled');
    const pausedAt = Date.now();
    assert.equal((await node.node.materialiser.runOnce()).made, 0, 'nothing is made while paused');

    // The pause lasts 7 s on purpose: past the 3 s already made when it began (canceled, not
    // missed), that stretch is what resume must count as missed.
    await delay(Math.max(0, pausedAt + 7 * SEC - Date.now()));
    assert.equal((await node.api('PATCH', '/v1/schedules/beat', { paused: false })).status, 200);
    await waitUntil('the schedule counts the pause as missed', async () => (await node.api('GET', '/v1/schedules/beat')).body.missedCount >= 2, 10_000, 100);
    const resumedAt = Date.now();
    await rx.waitFor((reqs) => reqs.some((r) => r.receivedAt > resumedAt + SEC), 10_000);
    const all = rx.requests.map((r) => String(r.headers['webhook-id']));
    assert.equal(new Set(all).size, all.length, 'still each occurrence once');
  });
});
