/**
 * Recurring schedules in a 3-node PostgreSQL cluster: a survivor (in process), a bystander and a
 * victim (real processes). Schedules whose shard the victim owns are materialised by it; after a
 * SIGKILL the other two take its shards over and go on materialising them. Every occurrence up to the last
 * delivered is delivered or counted missed, none made twice, and firing resumes within seconds.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { shardOf } from '../../src/core/shard.ts';
import { startReceiver, type ReceivedRequest, type Receiver } from '../support/receiver.ts';
import { ADMIN_KEY, startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { killNodeProcess, startNodeProcess, type NodeProcess } from '../support/process.ts';
import { dropTestSchema, TEST_PG_URL as PG_URL } from '../support/pg.ts';

const SHARDS = 256;
const SEC = 1_000;
/** Shards move a few seconds after the kill; firing must resume within this. */
const RESUME_MS_MAX = 10_000;

function occurrence(r: ReceivedRequest): { schedule: string; at: number } {
  const id = String(r.headers['webhook-id']);
  const at = id.indexOf('@');
  return { schedule: id.slice(0, at), at: Date.parse(id.slice(at + 1)) };
}

describe('schedules on a 3-node PostgreSQL cluster: a killed node’s schedules go on from the others', () => {
  const schema = `belfry_sch_${randomBytes(4).toString('hex')}`;
  const store = `${PG_URL}?schema=${schema}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-sch-fo-'));
  let survivor: TestNode;
  let victim: NodeProcess;
  let bystander: NodeProcess;
  let rx: Receiver;

  before(async () => {
    rx = await startReceiver({ behavior: () => ({ status: 200 }) });
    survivor = await startTestNode({ store, nodeId: 'survivor', scheduleHorizonMs: 1_000 });
    const args = (id: string) => [
      '--store',
      store,
      '--node-id',
      id,
      '--admin-key',
      ADMIN_KEY,
      '--allow-hosts',
      '127.0.0.1',
      '--data',
      join(dataDir, id),
      '--schedule-horizon',
      '1s',
    ];
    [victim, bystander] = await Promise.all([startNodeProcess(args('victim')), startNodeProcess(args('bystander'))]);
  });
  after(async () => {
    if (victim) await killNodeProcess(victim);
    if (bystander) await killNodeProcess(bystander);
    await rx?.close();
    await survivor?.close();
    await dropTestSchema(schema);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps firing every second across the kill, each occurrence at most once, the gap counted missed', {
    timeout: 90_000,
  }, async () => {
    const { store: db } = survivor.node;
    await waitUntil(
      'the three nodes share the shards',
      async () => {
        const owners = (await db.shardList()).map((a) => a.nodeId);
        return ['victim', 'survivor', 'bystander'].every((n) => owners.filter((o) => o === n).length >= 85);
      },
      30_000,
      100,
    );
    assert.equal((await survivor.api('PUT', '/v1/destinations/rx', { url: rx.url })).status, 201);
    const map = new Map((await db.shardList()).map((a) => [a.shard, a.nodeId]));
    const pick = (owner: string) => {
      for (let i = 0; ; i++)
        if (map.get(shardOf(survivor.tenantId, `${owner}-${i}`, SHARDS)) === owner) return `${owner}-${i}`;
    };
    const ids = [pick('victim'), pick('survivor'), pick('bystander')];
    const startAt = Math.ceil((Date.now() + 1_500) / SEC) * SEC;
    for (const id of ids) {
      const res = await survivor.api('POST', '/v1/schedules', {
        id,
        every: '1s',
        startAt,
        destination: 'rx',
        missed: 'skip',
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    const of = (id: string) => rx.requests.filter((r) => occurrence(r).schedule === id);
    await rx.waitFor(() => ids.every((id) => of(id).length >= 4), 20_000);
    const killedAt = Date.now();
    await killNodeProcess(victim);
    await rx.waitFor(
      () => of(ids[0]).some((r) => occurrence(r).at > killedAt + 3 * SEC) && of(ids[0]).length >= 8,
      30_000,
    );
    const resumedAt = Math.min(
      ...of(ids[0])
        .filter((r) => r.receivedAt > killedAt && occurrence(r).at > killedAt + 3 * SEC)
        .map((r) => r.receivedAt),
    );
    await rx.waitFor(() => ids.every((id) => of(id).some((r) => r.receivedAt > resumedAt + 2 * SEC)), 10_000);
    const victimShard = shardOf(survivor.tenantId, ids[0], SHARDS);
    const newOwner = (await db.shardList()).find((a) => a.shard === victimShard)?.nodeId;
    assert.ok(newOwner === 'survivor' || newOwner === 'bystander', `the victim's shard moved (to ${newOwner})`);

    for (const id of ids) {
      const got = of(id);
      const ats = [...new Set(got.map((r) => occurrence(r).at))].sort((a, b) => a - b);
      const last = ats[ats.length - 1];
      const s = (await survivor.api('GET', `/v1/schedules/${id}`)).body as { missedCount: number };
      const grid = (last - startAt) / SEC + 1;
      console.log(
        `cluster schedule ${id}: ${ats.length} delivered, ${s.missedCount} missed, ${got.length - ats.length} repeated deliveries, firing resumed ${resumedAt - killedAt} ms after the kill`,
      );
      assert.ok(got.length - ats.length <= 1, `${id}: at most the one delivery in flight at the kill repeats`);
      assert.equal(ats.length + s.missedCount, grid, `${id}: every occurrence delivered or missed, once`);
    }
    assert.ok(
      resumedAt - killedAt <= RESUME_MS_MAX,
      `the victim's schedule fired again ${resumedAt - killedAt} ms after the kill`,
    );
  });
});
