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
  it('delivers each occurrence once, on time; pause stops it; resume counts the pause as missed', {
    timeout: 60_000,
  }, async () => {
    assert.equal((await node.api('PUT', '/v1/destinations/rx', { url: rx.url })).status, 201);
    const startAt = Math.ceil((Date.now() + 1_000) / SEC) * SEC;
    const created = await node.api('POST', '/v1/schedules', {
      id: 'beat',
      every: '1s',
      startAt,
      destination: 'rx',
      payload: { beat: true },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await rx.waitFor((reqs) => reqs.length >= 5, 15_000);
    const ids = rx.requests.map((r) => String(r.headers['webhook-id']));
    assert.equal(new Set(ids).size, ids.length, 'each occurrence once');
    assert.deepEqual(
      ids.slice(0, 5),
      [0, 1, 2, 3, 4].map((k) => `beat@${new Date(startAt + k * SEC).toISOString()}`),
    );
    const lateness = rx.requests.map((r) => r.receivedAt - Date.parse(String(r.headers['webhook-id']).slice(5)));
    assert.ok(
      lateness.every((l) => l >= 0),
      'none early',
    );
    console.log(
      `schedule on a node: lateness p50 ${percentile(lateness, 50)} ms, p99 ${percentile(lateness, 99)} ms (n=${lateness.length})`,
    );
    const metrics = await fetch(`${node.url}/metrics`).then((r) => r.text());
    assert.match(metrics, /belfry_schedule_occurrences_total\{outcome="made"\} \d+/);

    assert.equal((await node.api('PATCH', '/v1/schedules/beat', { paused: true })).status, 200);
    const occ = (await node.api('GET', '/v1/events?schedule=beat&limit=100')).body.events as { state: string }[];
    assert.ok(
      occ.every((e) => e.state !== 'scheduled'),
      'the occurrences made and not fired are canceled',
    );
    const pausedAt = Date.now();
    assert.equal((await node.node.materialiser.runOnce()).made, 0, 'nothing is made while paused');

    // The pause lasts 7 s on purpose: past the 3 s already made when it began (canceled, not
    // missed), that stretch is what resume must count as missed.
    await delay(Math.max(0, pausedAt + 7 * SEC - Date.now()));
    assert.equal((await node.api('PATCH', '/v1/schedules/beat', { paused: false })).status, 200);
    await waitUntil(
      'the schedule counts the pause as missed',
      async () => (await node.api('GET', '/v1/schedules/beat')).body.missedCount >= 2,
      10_000,
      100,
    );
    const resumedAt = Date.now();
    await rx.waitFor((reqs) => reqs.some((r) => r.receivedAt > resumedAt + SEC), 10_000);
    const all = rx.requests.map((r) => String(r.headers['webhook-id']));
    assert.equal(new Set(all).size, all.length, 'still each occurrence once');
  });

  it("fires a new schedule's first occurrence on time, and after a resume its next one", {
    timeout: 60_000,
  }, async () => {
    assert.equal((await node.api('PUT', '/v1/destinations/rx2', { url: rx.url })).status, 201);
    const atOf = (r: { headers: Record<string, unknown> }) => Date.parse(String(r.headers['webhook-id']).split('@')[1]);
    const of = (id: string) => rx.requests.filter((r) => String(r.headers['webhook-id']).startsWith(`${id}@`));
    // No startAt: the first occurrence is the creation instant, made by the create itself.
    const firsts: number[] = [];
    for (let i = 0; i < 5; i++) {
      const id = `first-${i}`;
      assert.equal(
        (await node.api('POST', '/v1/schedules', { id, every: '1s', destination: 'rx2', missed: 'skip' })).status,
        201,
      );
      await rx.waitFor(() => of(id).length >= 1, 5_000);
      const [first] = of(id);
      firsts.push(first.receivedAt - atOf(first));
      assert.equal((await node.api('DELETE', `/v1/schedules/${id}`)).status, 200);
    }
    console.log(`# first occurrence lateness: ${firsts.join(', ')} ms`);
    assert.ok(
      firsts.every((l) => l >= 0 && l < 300),
      `first occurrences on time: ${firsts.join(', ')} ms`,
    );

    // Pauses shorter and longer than the horizon (3 s here): the next occurrence after the
    // resume fires on time, every later one arrives, and the paused stretch is counted missed.
    const startAt = Math.ceil((Date.now() + 500) / SEC) * SEC;
    assert.equal(
      (await node.api('POST', '/v1/schedules', { id: 'pz', every: '1s', startAt, destination: 'rx2', missed: 'skip' }))
        .status,
      201,
    );
    await rx.waitFor(() => of('pz').length >= 2, 10_000);
    for (const pauseMs of [1_500, 5_000]) {
      assert.equal((await node.api('PATCH', '/v1/schedules/pz', { paused: true })).status, 200);
      await delay(pauseMs); // the pause itself is the condition under test
      const resumed = await node.api('PATCH', '/v1/schedules/pz', { paused: false });
      assert.equal(resumed.status, 200);
      const resumedAt = Date.now();
      await rx.waitFor(() => of('pz').filter((r) => atOf(r) > resumedAt).length >= 3, 10_000);
      const after = of('pz')
        .filter((r) => atOf(r) > resumedAt)
        .sort((a, b) => atOf(a) - atOf(b));
      const next = after[0];
      console.log(`# pause ${pauseMs} ms: next occurrence after the resume ${next.receivedAt - atOf(next)} ms late`);
      assert.ok(
        next.receivedAt - atOf(next) < 300,
        `the next occurrence after a ${pauseMs} ms pause fires on time (${next.receivedAt - atOf(next)} ms late)`,
      );
      assert.deepEqual(
        after.slice(0, 3).map(atOf),
        [0, 1, 2].map((k) => atOf(next) + k * SEC),
        'and each one after it',
      );
    }
    const delivered = new Set(of('pz').map(atOf));
    const last = Math.max(...delivered);
    const grid = (last - startAt) / SEC + 1;
    await waitUntil(
      'every occurrence of pz delivered or counted missed',
      async () => {
        const missed = (await node.api('GET', '/v1/schedules/pz')).body.missedCount as number;
        return (
          new Set(
            of('pz')
              .map(atOf)
              .filter((at) => at <= last),
          ).size +
            missed ===
          grid
        );
      },
      10_000,
      100,
    );
    assert.equal(of('pz').length, delivered.size, 'each occurrence once');
  });
});
