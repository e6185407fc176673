/**
 * Catch-up is bounded work, shared fairly: one tenant's 1,000 every-second schedules with a week
 * to catch up (resumed after a week's pause, then a week of the node "down" for them) do not delay
 * another tenant's on-time occurrences by more than 250 ms, on a real in-process node (SQLite, the
 * real scheduler, materialiser and webhooks to loopback receivers). A week of missed occurrences
 * is counted, not walked.
 *
 * The week is made by moving the schedules' stored cursors back a week (the store's own update,
 * as a week-long pause or outage leaves them), not by waiting.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { percentile, startTestNode, waitUntil, ADMIN_KEY, type TestNode } from '../support/node.ts';
import { callApi } from '../support/http.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';

const SEC = 1_000;
const WEEK_MS = 7 * 86_400 * SEC;
const SCHEDULES = 1_000;
const CONCURRENCY = 16;

let node: TestNode;
let rxA: Receiver;
let rxB: Receiver;

before(async () => {
  rxA = await startReceiver({ countOnly: true });
  rxB = await startReceiver();
  node = await startTestNode();
});
after(async () => {
  await node?.close();
  await rxA?.close();
  await rxB?.close();
});

/** Runs `fn` over `items`, CONCURRENCY at a time. */
async function each<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

describe('schedule catch-up shared fairly between tenants', () => {
  it(`a tenant's ${SCHEDULES} schedules catching up a week leave another tenant's occurrences on time`, {
    timeout: 240_000,
  }, async () => {
    // Tenant A (its own key) and tenant B (the test node's).
    const tenantA = await callApi(node.url, ADMIN_KEY, 'POST', '/v1/tenants', { name: 'a' });
    const keyA = (await callApi(node.url, ADMIN_KEY, 'POST', `/v1/tenants/${tenantA.body.id}/keys`, {})).body
      .key as string;
    const apiA = (method: string, path: string, body?: unknown) => callApi(node.url, keyA, method, path, body);
    assert.equal((await apiA('PUT', '/v1/destinations/rx', { url: rxA.url, maxConcurrency: 200 })).status, 201);
    assert.equal((await node.api('PUT', '/v1/destinations/rx', { url: rxB.url })).status, 201);
    const ids = Array.from({ length: SCHEDULES }, (_, i) => `a-${i}`);
    const startAt = Math.floor((Date.now() - 2 * WEEK_MS) / SEC) * SEC;
    await each(ids, async (id) => {
      const res = await apiA('POST', '/v1/schedules', {
        id,
        every: '1s',
        startAt,
        destination: 'rx',
        missed: 'skip',
        paused: true,
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    });
    const store = node.node.store;
    const weekBack = async () => {
      const back = Date.now() - WEEK_MS;
      await each(ids, async (id) => {
        assert.equal(
          (await store.scheduleUpdate({ tenantId: tenantA.body.id, id, nextAt: back, now: Date.now() })).kind,
          'ok',
        );
      });
    };

    // B's schedule runs on time meanwhile.
    assert.equal(
      (await node.api('POST', '/v1/schedules', { id: 'b', every: '1s', destination: 'rx', missed: 'skip' })).status,
      201,
    );
    await rxB.waitFor((reqs) => reqs.length >= 2, 10_000);
    const lateness = (fromMs: number) =>
      rxB.requests
        .map((r) => ({ at: Date.parse(String(r.headers['webhook-id']).split('@')[1]), receivedAt: r.receivedAt }))
        .filter((o) => o.at >= fromMs)
        .map((o) => o.receivedAt - o.at);

    // 1. A week's pause, then every one of A's schedules resumed (each resume catches its week up).
    await weekBack();
    const resumeFrom = Date.now();
    await each(ids, async (id) => {
      const res = await apiA('PATCH', `/v1/schedules/${id}`, { paused: false });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.ok(
        res.body.missedCount >= WEEK_MS / SEC - 60,
        `${id}: a week of occurrences counted missed (${res.body.missedCount})`,
      );
    });
    const resumeMs = Date.now() - resumeFrom;
    await waitUntil(
      'B delivers 3 s past the resumes',
      () => rxB.requests.some((r) => r.receivedAt > resumeFrom + resumeMs + 3 * SEC),
      20_000,
      50,
    );
    const duringResume = lateness(resumeFrom);

    // 2. A week "down" for A's schedules (cursors a week back, not paused): the materialiser's catch-up.
    await weekBack();
    const catchUpFrom = Date.now();
    await waitUntil(
      `the materialiser caught A's ${SCHEDULES} schedules up`,
      async () => {
        const page = await store.scheduleListCatchUp({
          shards: null,
          beforeMs: Date.now() - 2 * SEC,
          afterTenantId: '',
          limit: 10,
        });
        return page.length === 0;
      },
      120_000,
      100,
    );
    const catchUpMs = Date.now() - catchUpFrom;
    await waitUntil(
      'B delivers 3 s past the catch-up',
      () => rxB.requests.some((r) => r.receivedAt > catchUpFrom + catchUpMs + 3 * SEC),
      20_000,
      50,
    );
    const duringCatchUp = lateness(catchUpFrom);

    const p99a = percentile(duringResume, 99);
    const p99b = percentile(duringCatchUp, 99);
    console.log(
      `# fairness: ${SCHEDULES} schedules of A resumed after a week in ${resumeMs} ms: B's lateness p50 ${percentile(duringResume, 50)} ms p99 ${p99a} ms max ${Math.max(...duringResume)} ms (n=${duringResume.length}); ` +
        `caught up by the materialiser after a week down in ${catchUpMs} ms: B's p50 ${percentile(duringCatchUp, 50)} ms p99 ${p99b} ms max ${Math.max(...duringCatchUp)} ms (n=${duringCatchUp.length}); A's deliveries ${rxA.count}`,
    );
    assert.ok(p99a <= 250, `B's p99 lateness while A resumes: ${p99a} ms`);
    assert.ok(p99b <= 250, `B's p99 lateness while A catches up: ${p99b} ms`);
    const b = (await node.api('GET', '/v1/schedules/b')).body;
    assert.equal(b.missedCount, 0, "none of B's on-time occurrences was missed");
  });
});
