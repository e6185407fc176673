/**
 * A schedule firing every second, with real processes: it keeps firing across a SIGKILL and a
 * restart on the same data dir, each occurrence at most once (bar the one delivery that may have
 * been in flight at the kill: at least once), with the outage's occurrences following `missed`
 * (skip: none; fire-all: at most catchUpMax) and every occurrence accounted for as delivered or
 * missed. Prints the lateness p99 of on-time occurrences and the catch-up counts.
 *
 * The outage lasts OUTAGE_MS on purpose (longer than the node's schedule horizon, so the outage
 * has occurrences not yet made): that wait is the fault being tested, not a wait for a result.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { percentile } from '../support/node.ts';
import { callApi as api } from '../support/http.ts';
import { startReceiver, type ReceivedRequest, type Receiver } from '../support/receiver.ts';
import { killNodeProcess, startNodeProcess, type NodeProcess } from '../support/process.ts';

const ADMIN_KEY = 'e2e-admin-key-0123456789abcdef';
const OUTAGE_MS = 8_000;
/** The node's effective horizon: --schedule-horizon 1s, raised to its 3 s look-ahead. */
const HORIZON_MS = 3_000;
const SEC = 1_000;

function nodeArgs(dataDir: string): string[] {
  // Horizon 1 s (the node makes it at least its 3 s look-ahead): the outage outlasts it.
  return ['--data', dataDir, '--admin-key', ADMIN_KEY, '--allow-hosts', '127.0.0.1', '--schedule-horizon', '1s'];
}

/** The occurrence time of a delivery (`<schedule>@<time>` in webhook-id). */
function occurrence(r: ReceivedRequest): { schedule: string; at: number } {
  const id = String(r.headers['webhook-id']);
  const at = id.indexOf('@');
  return { schedule: id.slice(0, at), at: Date.parse(id.slice(at + 1)) };
}

describe('a schedule every second across SIGKILL and restart', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-e2e-sched-'));
  let rx: Receiver;
  let node: NodeProcess | undefined;
  after(async () => {
    if (node) await killNodeProcess(node);
    await rx?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps firing, never makes an occurrence twice, and follows missed', async () => {
    rx = await startReceiver({ behavior: () => ({ status: 200 }) });
    node = await startNodeProcess(nodeArgs(dataDir));
    const tenant = await api(node.url, ADMIN_KEY, 'POST', '/v1/tenants', { name: 'e2e' });
    const key = (await api(node.url, ADMIN_KEY, 'POST', `/v1/tenants/${tenant.body.id}/keys`, {})).body.key as string;
    assert.equal((await api(node.url, key, 'PUT', '/v1/destinations/rx', { url: rx.url })).status, 201);
    const startAt = Math.ceil((Date.now() + 1_500) / SEC) * SEC;
    for (const [id, missed] of [['skip', 'skip'], ['all', 'fire-all']] as const) {
      const res = await api(node.url, key, 'POST', '/v1/schedules', { id, every: '1s', startAt, destination: 'rx', missed, catchUpMax: 3 });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    const of = (schedule: string, reqs: ReceivedRequest[]) => reqs.filter((r) => occurrence(r).schedule === schedule);
    await rx.waitFor((reqs) => of('skip', reqs).length >= 4 && of('all', reqs).length >= 4, 20_000);

    await killNodeProcess(node);
    const killedAt = Date.now();
    const beforeKill = rx.requests.length;
    await delay(OUTAGE_MS);
    node = await startNodeProcess(nodeArgs(dataDir));
    const restartedAt = Date.now();
    await rx.waitFor((reqs) => reqs.filter((r) => r.receivedAt > restartedAt && occurrence(r).at > restartedAt + 2 * SEC).length >= 8, 30_000);

    for (const id of ['skip', 'all']) {
      const got = of(id, rx.requests);
      const ats = [...new Set(got.map((r) => occurrence(r).at))].sort((a, b) => a - b);
      const duplicates = got.length - ats.length;
      assert.ok(duplicates <= 1, `${id}: ${duplicates} repeated deliveries (at most the one in flight at the kill)`);
      assert.ok(ats.every((at) => (at - startAt) % SEC === 0 && at >= startAt), `${id}: every occurrence on the 1 s grid from startAt`);
      const schedule: { missedCount: number } = (await api(node.url, key, 'GET', `/v1/schedules/${id}`)).body;
      // Every occurrence up to the last delivered one was delivered or counted missed, none both.
      const last = ats[ats.length - 1];
      const grid = (last - startAt) / SEC + 1;
            assert.equal(ats.length + schedule.missedCount, grid, `${id}: ${ats.length} delivered + ${schedule.missedCount} missed = ${grid} occurrences`);
      // Made before the kill: up to the horizon (3 s, the look-ahead) past it, and these fire late
      // after the restart as any event due meanwhile does. The rest of the outage was not made.
      const outage = ats.filter((at) => at > killedAt + HORIZON_MS + SEC && at < restartedAt - 2 * SEC);
      const downtime = outage.length;
      if (id === 'skip') {
        assert.ok(schedule.missedCount >= 2, `skip: the outage's occurrences are missed (${schedule.missedCount})`);
        assert.equal(downtime, 0, 'skip: nothing of the outage is delivered, bar what was made before the kill');
      } else {
        assert.ok(downtime <= 3, `fire-all: at most catchUpMax (3) of the outage (${downtime})`);
        assert.ok(downtime >= 1, `fire-all: the outage's first occurrences are caught up (${downtime})`);
      }
      const onTime = got.filter((r) => r.receivedAt < killedAt || occurrence(r).at > restartedAt + 2 * SEC).map((r) => r.receivedAt - occurrence(r).at);
      console.log(
        `schedule ${id}: ${ats.length} occurrences delivered (${beforeKill} requests before the kill), missed ${schedule.missedCount}, ` +
          `outage ${restartedAt - killedAt} ms, delivered from the outage ${downtime}, repeats ${duplicates}, ` +
          `on-time lateness p50 ${percentile(onTime, 50)} ms p99 ${percentile(onTime, 99)} ms (n=${onTime.length})`,
      );
      assert.ok(onTime.every((l) => l >= 0), `${id}: nothing delivered before its occurrence`);
    }
  });
});
