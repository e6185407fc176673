/**
 * Isolation: a destination that fails every request, or hangs until timeout, must not delay
 * another destination's events due at the same moments (one virtual queue per destination,
 * circuit breaker; behind an open circuit A's events stay unclaimed). Issue requirement: B's
 * 2,000 events each delivered within 100 ms of due.
 * A timing assertion: it runs in the slow suite, alone, not beside other test files.
 *
 * Each case first warms the process up through destinations of its own (one answering 200, one
 * answering 500, each below the breaker's threshold): the first deliveries of a fresh process run
 * cold code (JIT, first connections, the in-process receivers' first requests) and were 70–160 ms
 * late on this machine whatever A did, so the first case failed and the second passed with either
 * mode first. The warm-up keeps that cost out of what the bound measures: A's effect on B.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { percentile, startTestNode, type TestNode } from '../support/node.ts';
import { citusSkip, startCitus } from '../support/citus.ts';
import { busiestBetween, cpuSnapshot, type CpuSnapshot } from '../support/cpu.ts';

const EVENTS_PER_DESTINATION = 2_000;
const SPREAD_MS = 4_000;
const LATENESS_MS_MAX = 100;
/** Warm-up events to a healthy destination, and to a failing one (fewer than the breaker's threshold of 10). */
const WARMUP_OK = 200;
const WARMUP_FAILING = 8;

/** Delivers a first round of successes and final failures, to destinations A and B never share. */
async function warmUp(t: TestNode, ok: Receiver, failing: Receiver): Promise<void> {
  assert.equal((await t.api('PUT', '/v1/destinations/warm-ok', { url: ok.url, maxConcurrency: 50 })).status, 201);
  assert.equal(
    (await t.api('PUT', '/v1/destinations/warm-failing', { url: failing.url, retry: { maxAttempts: 1 } })).status,
    201,
  );
  const at = Date.now() + 300;
  const events = [
    ...Array.from({ length: WARMUP_OK }, (_, i) => ({
      id: `w-ok-${i}`,
      fireAt: at + i * 2,
      destination: 'warm-ok',
      payload: {},
    })),
    ...Array.from({ length: WARMUP_FAILING }, (_, i) => ({
      id: `w-failing-${i}`,
      fireAt: at + i * 50,
      destination: 'warm-failing',
      payload: {},
    })),
  ];
  assert.equal((await t.api('POST', '/v1/events/batch', { events })).status, 200);
  await ok.waitFor((reqs) => reqs.length >= WARMUP_OK, 15_000);
  await failing.waitFor((reqs) => reqs.length >= WARMUP_FAILING, 15_000);
}

/**
 * The stores the cases run on: SQLite (the node's default), and a store distributed on a
 * throw-away Citus cluster (a coordinator and two workers; test/support/citus.ts), skipped with
 * the reason where Citus is not installed (never in CI). The node, the coordinator and both
 * workers share the machine: on a busy 2-core machine B's first half second of firing there was
 * up to 121-799 ms late, on a quiet one 17-30 ms (docs/citus.md, Failures and isolation); the
 * CPU figures printed say which it was.
 */
const STORES = [
  { name: 'sqlite', skip: false as string | false, store: async () => ({}) },
  {
    name: 'Citus',
    skip: citusSkip(),
    store: async () => ({
      store: `${await startCitus()}?schema=belfry_iso_${randomBytes(4).toString('hex')}&citus=true`,
    }),
  },
];

/**
 * A's behaviours. With BELFRY_ISO_CONTROL=1 also the control, A healthy: the same load with
 * nothing failing, so that B's lateness there tells what the machine and the store cost B with
 * no failure to isolate (on Citus, docs/citus.md).
 */
const MODES = [
  'answers 500',
  'hangs until timeout',
  ...(process.env.BELFRY_ISO_CONTROL === '1' ? (['answers 200 (the control)'] as const) : []),
] as const;

for (const { name: storeName, skip, store } of STORES)
  for (const mode of MODES) {
    describe(`isolation on ${storeName} when destination A ${mode}`, { skip }, () => {
      let t: TestNode;
      let a: Receiver;
      let b: Receiver;
      let warmOk: Receiver;
      let warmFailing: Receiver;
      after(async () => {
        await t?.close();
        for (const r of [a, b, warmOk, warmFailing]) await r?.close();
      });

      it(`delivers all of B's ${EVENTS_PER_DESTINATION} events within ${LATENESS_MS_MAX} ms of due`, async () => {
        t = await startTestNode(await store());
        a = await startReceiver({
          behavior: () =>
            mode === 'answers 500'
              ? { status: 500 }
              : mode === 'hangs until timeout'
                ? { status: 200, hang: true }
                : { status: 200 },
        });
        b = await startReceiver({ behavior: () => ({ status: 200 }) });
        warmOk = await startReceiver({ behavior: () => ({ status: 200 }) });
        warmFailing = await startReceiver({ behavior: () => ({ status: 500 }) });
        await warmUp(t, warmOk, warmFailing);
        // Whatever the files before this one left for the disk to write (the flood tests drop a
        // schema of 100,000 events and delete large data dirs) is written now, not while B is
        // measured: the bound is about A's effect on B.
        execFileSync('sync');
        assert.equal(
          (
            await t.api('PUT', '/v1/destinations/a', {
              url: a.url,
              timeout: '1s',
              retry: { maxAttempts: 3, minBackoff: '1s', maxBackoff: '2s' },
            })
          ).status,
          201,
        );
        assert.equal((await t.api('PUT', '/v1/destinations/b', { url: b.url, maxConcurrency: 50 })).status, 201);

        // Both destinations get an event due at the same millisecond, SPREAD_MS / 2000 apart.
        const start = Date.now() + 2_500;
        const events = [];
        for (let i = 0; i < EVENTS_PER_DESTINATION; i++) {
          const fireAt = start + Math.floor((i * SPREAD_MS) / EVENTS_PER_DESTINATION);
          events.push({ id: `a-${i}`, fireAt, destination: 'a', payload: { fireAt } });
          events.push({ id: `b-${i}`, fireAt, destination: 'b', payload: { fireAt } });
        }
        for (let i = 0; i < events.length; i += 1_000) {
          const res = await t.api('POST', '/v1/events/batch', { events: events.slice(i, i + 1_000) });
          assert.equal(res.status, 200);
          assert.ok(res.body.results.every((r: { status: string }) => r.status === 'created'));
        }
        assert.ok(Date.now() < start, 'scheduling took longer than the lead time; the test would measure nothing');

        // Who used the CPU in the first 500 ms after the first due event (where B's worst lateness
        // falls on a busy machine) and until B's last delivery.
        const cpu: CpuSnapshot[] = [];
        const marks = [start, start + 500].map(
          (atMs) =>
            new Promise<void>((r) =>
              setTimeout(() => {
                cpu.push(cpuSnapshot());
                r();
              }, atMs - Date.now()),
            ),
        );
        await b.waitFor((reqs) => reqs.length >= EVENTS_PER_DESTINATION, SPREAD_MS + 15_000);
        await Promise.all(marks);
        const cpuEnd = cpuSnapshot();
        const names = new Map([[process.pid, 'this test (the node, the receivers)']]);
        const shares = (from: CpuSnapshot, to: CpuSnapshot) => {
          const { machinePct, busiest } = busiestBetween(from, to, names, 4);
          return `machine ${machinePct} %, ${busiest.map((p) => `${p.process} ${p.pct} %`).join(', ')}`;
        };
        const lateness = b.requests.map((r) => r.receivedAt - (r.json as { fireAt: number }).fireAt);
        const worst = Math.max(...lateness);
        const early = lateness.filter((l) => l < 0).length;
        console.log(
          `isolation on ${storeName} (A ${mode}): B delivered ${b.count}, lateness p50 ${percentile(lateness, 50)} ms, p99 ${percentile(lateness, 99)} ms, max ${worst} ms; A received ${a.count}; CPU in % of a core, first 500 ms: ${shares(cpu[0], cpu[1])}; until B's last: ${shares(cpu[0], cpuEnd)}`,
        );
        assert.equal(new Set(b.requests.map((r) => r.headers['webhook-id'])).size, EVENTS_PER_DESTINATION);
        assert.equal(early, 0, 'some events were delivered before their due time');
        assert.ok(worst <= LATENESS_MS_MAX, `worst lateness of B was ${worst} ms`);
        if (mode === 'answers 200 (the control)') {
          await a.waitFor((reqs) => reqs.length >= EVENTS_PER_DESTINATION, 15_000);
          return;
        }
        assert.ok(a.count > 0, 'A was never tried');
        assert.ok(a.count < EVENTS_PER_DESTINATION, 'the circuit breaker never opened for A');
        // A's last event fell due while A's circuit was open: it was left scheduled, unclaimed,
        // with no attempt spent (not claimed to fail fast and be retried).
        const last = await t.api('GET', `/v1/events/a-${EVENTS_PER_DESTINATION - 1}`);
        assert.equal(last.status, 200);
        assert.deepEqual([last.body.state, last.body.attempts], ['scheduled', 0]);
      });
    });
  }
