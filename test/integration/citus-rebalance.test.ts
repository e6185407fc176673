/**
 * Adding a worker to a store on Citus while it fires (docs/scaling.md, "Adding a worker"): the
 * second worker of the test cluster is drained first (its shards moved to the first), then, while
 * a node fires a stream of events, given shards again and the shards rebalanced onto it
 * (`citus_rebalance_start`). Every event is delivered, none early, and shards end up on the added
 * worker. Moves block writes to a shard while it is copied (`block_writes`: the test cluster has
 * no logical replication), the harsher of Citus' two modes. Skipped, with the reason, where Citus
 * is not installed (never in CI: BELFRY_REQUIRE_CITUS=1).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { citusSkip, startCitus } from '../support/citus.ts';
import { percentile, startTestNode, waitUntil, type TestNode } from '../support/node.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';

const EVENTS = 2_000;
const SPREAD_MS = 8_000;
const LEAD_MS = 3_000;
/** A first delivery later than this after its due time fails the test: moves stall a shard's writes for a moment, not for long. */
const LATENESS_MS_MAX = 10_000;

describe('adding a worker to a store on Citus while it fires', { skip: citusSkip() }, () => {
  const schema = `belfry_rb_${randomBytes(4).toString('hex')}`;
  let admin: pg.Client;
  let t: TestNode;
  let rx: Receiver;
  let worker: { host: string; port: number };

  before(async () => {
    const coordinator = await startCitus();
    admin = new pg.Client({ connectionString: coordinator });
    await admin.connect();
    t = await startTestNode({ store: `${coordinator}?schema=${schema}&citus=true` });
    rx = await startReceiver({ behavior: () => ({ status: 200 }) });
    const { rows } = await admin.query<{ nodename: string; nodeport: number }>(
      `SELECT nodename, nodeport FROM pg_dist_node WHERE groupid > 0 AND noderole = 'primary' ORDER BY nodeport DESC LIMIT 1`,
    );
    worker = { host: rows[0].nodename, port: rows[0].nodeport };
  });
  after(async () => {
    await t?.close();
    await rx?.close();
    await admin?.query(`SELECT citus_set_node_property($1, $2, 'shouldhaveshards', true)`, [worker.host, worker.port]);
    await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin?.end();
  });

  /** Shards of this store's events table placed on the added worker. */
  async function eventShardsOnWorker(): Promise<number> {
    const { rows } = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
         JOIN pg_dist_node n ON n.groupid = p.groupid
        WHERE s.logicalrelid = $1::regclass AND n.nodename = $2 AND n.nodeport = $3`,
      [`${schema}.events`, worker.host, worker.port],
    );
    return rows[0].n;
  }

  it('delivers every event, none early, while shards move onto the added worker', async () => {
    await admin.query(`SELECT citus_drain_node($1, $2, shard_transfer_mode => 'block_writes')`, [
      worker.host,
      worker.port,
    ]);
    assert.equal(await eventShardsOnWorker(), 0, 'the drained worker holds none of the events shards');

    assert.equal((await t.api('PUT', '/v1/destinations/rx', { url: rx.url, maxConcurrency: 50 })).status, 201);
    const start = Date.now() + LEAD_MS;
    const events = Array.from({ length: EVENTS }, (_, i) => {
      const fireAt = start + Math.floor((i * SPREAD_MS) / EVENTS);
      return { id: `rb-${i}`, fireAt, destination: 'rx', payload: { fireAt } };
    });
    for (let i = 0; i < EVENTS; i += 1_000) {
      const res = await t.api('POST', '/v1/events/batch', { events: events.slice(i, i + 1_000) });
      assert.equal(res.status, 200);
    }

    // A quarter into the stream, the worker is added back and the shards rebalanced onto it.
    await waitUntil('a quarter of the events delivered', () => rx.count >= EVENTS / 4, SPREAD_MS + 30_000, 20);
    const rebalanceAt = Date.now();
    await admin.query(`SELECT citus_set_node_property($1, $2, 'shouldhaveshards', true)`, [worker.host, worker.port]);
    await admin.query(`SELECT citus_rebalance_start(shard_transfer_mode => 'block_writes')`);
    await admin.query('SELECT citus_rebalance_wait()');
    const rebalanceMs = Date.now() - rebalanceAt;
    const moved = await eventShardsOnWorker();

    await rx.waitFor((reqs) => new Set(reqs.map((r) => r.headers['webhook-id'])).size >= EVENTS, 60_000);
    const first = new Map<string, number>();
    for (const r of rx.requests) {
      const id = String(r.headers['webhook-id']);
      const late = r.receivedAt - (r.json as { fireAt: number }).fireAt;
      if (!first.has(id)) first.set(id, late);
    }
    const lateness = [...first.values()];
    console.log(
      `rebalance onto the added worker: ${moved} events shards moved in ${rebalanceMs} ms while firing; ${first.size} events delivered (${rx.requests.length} requests), lateness p50 ${percentile(lateness, 50)} ms, p99 ${percentile(lateness, 99)} ms, max ${Math.max(...lateness)} ms`,
    );
    assert.equal(first.size, EVENTS, 'every event delivered');
    assert.equal(lateness.filter((l) => l < 0).length, 0, 'none delivered before its due time');
    assert.ok(moved > 0, 'the rebalance moved shards onto the added worker');
    assert.ok(
      Math.max(...lateness) <= LATENESS_MS_MAX,
      `every first delivery within ${LATENESS_MS_MAX} ms of due (max ${Math.max(...lateness)} ms)`,
    );
  });
});
