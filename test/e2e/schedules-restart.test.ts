/**
 * Schedules firing every second, with real processes, across a stop of the node (SIGKILL, and
 * SIGTERM) and a restart on the same data dir. What a user can rely on, checked:
 * - every occurrence is delivered once or counted missed, none both (bar the one delivery that may
 *   have been in flight at a SIGKILL: at least once), and none is delivered early;
 * - an occurrence that could not fire within missedAfter (1 s) of its time follows `missed`,
 *   whether it had been made ahead before the stop or not: of the stretch the stop made late,
 *   skip delivers none, fire-once exactly one, fire-all exactly catchUpMax (3);
 * - on-time occurrences are on time (lateness printed).
 * Which occurrences fired late is read from their traces (the claim's lateness), the same number
 * the node judged them by.
 *
 * The stop lasts STOP_MS on purpose (BELFRY_E2E_STOP_MS to try another): that wait is the fault
 * being tested, not a wait for a result.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { percentile, waitUntil } from '../support/node.ts';
import { callApi as api } from '../support/http.ts';
import { startReceiver, type ReceivedRequest, type Receiver } from '../support/receiver.ts';
import { killNodeProcess, startNodeProcess, stopNodeProcess, type NodeProcess } from '../support/process.ts';

const ADMIN_KEY = 'e2e-admin-key-0123456789abcdef';
const STOP_MS = Number(process.env.BELFRY_E2E_STOP_MS ?? 6_000);
const SEC = 1_000;
const MISSED_AFTER_MS = 1_000;
const POLICIES = [
  ['skip', 'skip', 0],
  ['once', 'fire-once', 1],
  ['all', 'fire-all', 3],
] as const;

function nodeArgs(dataDir: string): string[] {
  return ['--data', dataDir, '--admin-key', ADMIN_KEY, '--allow-hosts', '127.0.0.1'];
}

/** The occurrence time of a delivery (`<schedule>@<time>` in webhook-id). */
function occurrence(r: ReceivedRequest): { schedule: string; at: number } {
  const id = String(r.headers['webhook-id']);
  const at = id.indexOf('@');
  return { schedule: id.slice(0, at), at: Date.parse(id.slice(at + 1)) };
}

for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
  describe(`schedules every second across a ${STOP_MS / SEC} s stop (${signal}) and a restart`, () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'belfry-e2e-sched-'));
    let rx: Receiver;
    let node: NodeProcess | undefined;
    after(async () => {
      if (node) await killNodeProcess(node);
      await rx?.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('delivers or counts every occurrence once, follows missed for the late ones, and fires the others on time', async () => {
      rx = await startReceiver({ behavior: () => ({ status: 200 }) });
      node = await startNodeProcess(nodeArgs(dataDir));
      const tenant = await api(node.url, ADMIN_KEY, 'POST', '/v1/tenants', { name: 'e2e' });
      const key = (await api(node.url, ADMIN_KEY, 'POST', `/v1/tenants/${tenant.body.id}/keys`, {})).body.key as string;
      assert.equal((await api(node.url, key, 'PUT', '/v1/destinations/rx', { url: rx.url })).status, 201);
      const startAt = Math.ceil((Date.now() + 1_500) / SEC) * SEC;
      for (const [id, missed] of POLICIES) {
        const res = await api(node.url, key, 'POST', '/v1/schedules', {
          id,
          every: '1s',
          startAt,
          destination: 'rx',
          missed,
          catchUpMax: 3,
        });
        assert.equal(res.status, 201, JSON.stringify(res.body));
      }
      const of = (schedule: string, reqs: ReceivedRequest[]) => reqs.filter((r) => occurrence(r).schedule === schedule);
      await rx.waitFor((reqs) => POLICIES.every(([id]) => of(id, reqs).length >= 3), 20_000);

      if (signal === 'SIGKILL') await killNodeProcess(node);
      else assert.equal((await stopNodeProcess(node)).code, 0, 'a graceful stop');
      const stoppedAt = Date.now();
      await delay(STOP_MS);
      node = await startNodeProcess(nodeArgs(dataDir));
      const restartedAt = Date.now();
      await rx.waitFor(
        (reqs) =>
          POLICIES.every(([id]) => of(id, reqs).filter((r) => occurrence(r).at > restartedAt + 2 * SEC).length >= 2),
        30_000,
      );

      const report: string[] = [];
      for (const [id, , lateFiresExpected] of POLICIES) {
        const got = of(id, rx.requests);
        const ats = [...new Set(got.map((r) => occurrence(r).at))].sort((a, b) => a - b);
        const repeats = got.length - ats.length;
        assert.ok(repeats <= (signal === 'SIGKILL' ? 1 : 0), `${id}: ${repeats} repeated deliveries`);
        assert.ok(
          ats.every((at) => (at - startAt) % SEC === 0 && at >= startAt),
          `${id}: every occurrence on the 1 s grid from startAt`,
        );
        assert.ok(
          got.every((r) => r.receivedAt >= occurrence(r).at),
          `${id}: nothing delivered before its time`,
        );
        // Every occurrence up to the last delivered one was delivered or counted missed, none both
        // (counts are written within a second: wait for them).
        const last = ats[ats.length - 1];
        const grid = (last - startAt) / SEC + 1;
        let missedCount = -1;
        await waitUntil(
          `${id}: ${grid} occurrences delivered or counted missed`,
          async () => {
            missedCount = (await api(node!.url, key, 'GET', `/v1/schedules/${id}`)).body.missedCount;
            const delivered = new Set(
              of(id, rx.requests)
                .map((r) => occurrence(r).at)
                .filter((at) => at <= last),
            ).size;
            return delivered + missedCount === grid;
          },
          10_000,
          100,
        );
        // Which fired late (more than missedAfter after their time), by the claim's lateness in the trace.
        let lateFired = 0;
        for (const at of ats) {
          const eventId = `${id}@${new Date(at).toISOString()}`;
          const trace = (await api(node.url, key, 'GET', `/v1/events/${encodeURIComponent(eventId)}/transitions`)).body
            .transitions as { toState: string; latenessMs: number | null }[];
          const firstClaim = trace.find((x) => x.toState === 'executing');
          if (firstClaim && (firstClaim.latenessMs ?? 0) > MISSED_AFTER_MS) lateFired += 1;
        }
        const stretch = ats.filter((at) => at > stoppedAt && at < restartedAt).length;
        assert.equal(
          lateFired,
          lateFiresExpected,
          `${id}: ${lateFired} occurrences fired late, the missed policy allows ${lateFiresExpected}`,
        );
        assert.ok(missedCount >= 2, `${id}: the stop made occurrences late (${missedCount} missed)`);
        const onTime = got
          .filter((r) => r.receivedAt < stoppedAt || occurrence(r).at > restartedAt + 2 * SEC)
          .map((r) => r.receivedAt - occurrence(r).at);
        report.push(
          `${id}: delivered ${ats.length}, fired late ${lateFired}, missed ${missedCount}, of the stop's stretch delivered ${stretch}, repeats ${repeats}, on-time lateness p50 ${percentile(onTime, 50)} ms p99 ${percentile(onTime, 99)} ms (n=${onTime.length})`,
        );
      }
      console.log(`# ${signal}, stopped ${restartedAt - stoppedAt} ms: ${report.join('; ')}`);
    });
  });
}
