/**
 * Isolation under a flood (the isolation invariant, docs/architecture.md): tenant A floods one
 * destination while tenant B's events, due at the same time or a few seconds later, must each be
 * delivered within LATENESS_P99_MS_MAX at the 99th percentile. Three floods, each on a fresh node,
 * on SQLite and on PostgreSQL (a schema of its own), with real loopback receivers:
 *   (a) 100,000 events due now to a destination throttled to 5 per second;
 *   (b) 100,000 events due now to an endpoint that answers 200 after 5 s;
 *   (c) 200,000 healthy events due within one second, with B's 100 in that same second.
 * The node is a process of its own (`belfry start`), as deployed. A's receiver and the client run
 * in the test process; B's receiver is a process of its own (the benchmark's), as B's endpoint
 * would be in a deployment: its timestamps must not wait behind the test process's handling of
 * A's thousands of requests per second, which is the test's load, not Belfry's. Also checked: the node's claimed-but-unrecorded events stay within
 * A's queue bound plus B's (the rest stay scheduled, unclaimed), and the node's memory stays
 * bounded: its peak RSS (VmHWM) is printed and asserted.
 *
 * A timing assertion: it runs in the slow suite, alone, not beside other test files.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { startReceiverProcess, type ReceiverProcess } from '../../bench/lib/receiver-process.ts';
import { callApi } from '../support/http.ts';
import { percentile } from '../support/node.ts';
import { dropTestSchema, TEST_PG_URL as PG_URL } from '../support/pg.ts';
import { startNodeProcess, stopNodeProcess, type NodeProcess } from '../support/process.ts';
import { scrapeMetrics } from '../support/metrics.ts';

const ADMIN_KEY = 'flood-admin-key-0123456789abcdef';

const LATENESS_P99_MS_MAX = 250;
/** The node process's peak RSS stays under this. */
const RSS_BYTES_MAX = 1_024 * 1024 * 1024;
const BATCH = 1_000;
/** Deliveries a fresh node makes before the flood (see warmUp). */
const WARMUP_EVENTS = 5_000;
/** Batch requests in flight at once while flooding. */
const SENDERS = 4;

interface Flood {
  name: string;
  aEvents: number;
  /** A's destination, given A's receiver URL. */
  aDestination: (url: string) => Record<string, unknown>;
  aBehavior: () => { status: number; delayMs?: number };
  /** When A's events fall due, relative to the moment the flood is scheduled. */
  aLeadMs: number;
  aSpreadMs: number;
  bEvents: number;
  /** When B's first event falls due, relative to A's first one, and over how long B's spread. */
  bOffsetMs: number;
  bSpreadMs: number;
}

const FLOODS: Flood[] = [
  {
    name: 'A floods a destination throttled to 5/s with 100,000 events due now',
    aEvents: 100_000,
    aDestination: (url) => ({ url, rateLimit: { perSecond: 5 } }),
    aBehavior: () => ({ status: 200 }),
    aLeadMs: 0,
    aSpreadMs: 0,
    bEvents: 1_000,
    bOffsetMs: 3_000,
    bSpreadMs: 5_000,
  },
  {
    name: 'A floods an endpoint answering 200 after 5 s with 100,000 events due now',
    aEvents: 100_000,
    aDestination: (url) => ({ url, timeout: '10s' }),
    aBehavior: () => ({ status: 200, delayMs: 5_000 }),
    aLeadMs: 0,
    aSpreadMs: 0,
    bEvents: 1_000,
    bOffsetMs: 3_000,
    bSpreadMs: 5_000,
  },
  {
    name: 'A has 200,000 healthy events due in one second, B 100 in that second',
    aEvents: 200_000,
    aDestination: (url) => ({ url, maxConcurrency: 50 }),
    aBehavior: () => ({ status: 200 }),
    aLeadMs: 20_000,
    // Claims are shared in turn (B's events go in the next claim, whatever A has due), the
    // read-ahead steps over a flooded queue's rows in the store (`skip`, docs/architecture.md), and
    // a queue with no claim in flight gets a spare claim slot (scheduler.ts): B waits for one small
    // claim of its own, then for its connections to open, while A saturates the node and, on
    // PostgreSQL, the server on the same two cores. B's p99 on PostgreSQL: 1.2–1.4 s in CI before
    // the skip, 191–375 ms in CI runs up to 2026-11-24; since claims commit without waiting for the
    // WAL flush (docs/postgres.md), 33–85 ms here (ten runs), 106–120 ms with one or two other
    // processes each busy on a core, and 59–65 ms in clean-clone CI (Node 20 and 24).
    aSpreadMs: 1_000,
    bEvents: 100,
    bOffsetMs: 0,
    bSpreadMs: 1_000,
  },
];

interface Node {
  process: NodeProcess;
  api(method: string, path: string, body: unknown, key: string): ReturnType<typeof callApi>;
}

/** The node's peak resident set (VmHWM), from /proc. */
function peakRssBytes(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

async function sendBatches(t: Node, key: string, events: object[]): Promise<void> {
  let next = 0;
  const sender = async () => {
    for (;;) {
      const i = next;
      next += BATCH;
      if (i >= events.length) return;
      const res = await t.api('POST', '/v1/events/batch', { events: events.slice(i, i + BATCH) }, key);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.ok(res.body.results.every((r: { status: string }) => r.status === 'created'));
    }
  };
  await Promise.all(Array.from({ length: SENDERS }, sender));
}

async function newTenantKey(t: Node, name: string): Promise<string> {
  const tenant = await t.api('POST', '/v1/tenants', { name }, ADMIN_KEY);
  assert.equal(tenant.status, 201);
  const key = await t.api('POST', `/v1/tenants/${tenant.body.id}/keys`, {}, ADMIN_KEY);
  assert.equal(key.status, 201);
  return key.body.key;
}

/**
 * A round of deliveries of B's own first, at a few thousand per second: a fresh node runs cold
 * code (V8 compiles the claim, delivery and recording paths only once they are hot), and its first
 * second of a burst delivers several times slower than later ones (see isolation.test.ts). What
 * the bound measures is A's effect on B, not the node's start.
 */
async function warmUp(t: Node, bKey: string, warm: Receiver): Promise<void> {
  assert.equal((await t.api('PUT', '/v1/destinations/warm', { url: warm.url, maxConcurrency: 50 }, bKey)).status, 201);
  const at = Date.now() + 500;
  const events = Array.from({ length: WARMUP_EVENTS }, (_, i) => ({
    id: `warm-${i}`,
    fireAt: at + Math.floor(i / 4),
    destination: 'warm',
    payload: {},
  }));
  await sendBatches(t, bKey, events);
  await warm.waitFor((reqs) => reqs.length >= events.length, 30_000);
}

for (const storeKind of ['sqlite', 'postgres'] as const)
  for (const flood of FLOODS) {
    describe(`isolation on ${storeKind}: ${flood.name}`, () => {
      let t: Node | undefined;
      const receivers: (Receiver | ReceiverProcess)[] = [];
      const schema = `belfry_flood_${randomBytes(4).toString('hex')}`;
      const dataDir = mkdtempSync(join(tmpdir(), 'belfry-flood-'));
      after(async () => {
        if (t) await stopNodeProcess(t.process);
        for (const r of receivers) await r.close();
        rmSync(dataDir, { recursive: true, force: true });
        if (storeKind === 'postgres') {
          // The flood's dirty pages are written out now, not during the next test's measurement.
          await dropTestSchema(schema, { checkpoint: true });
        }
      });

      it(`delivers B's events with p99 lateness ≤ ${LATENESS_P99_MS_MAX} ms, A's claims bounded, memory bounded`, async () => {
        const store = storeKind === 'postgres' ? ['--store', `${PG_URL}?schema=${schema}`] : [];
        const child = await startNodeProcess([
          '--data',
          dataDir,
          ...store,
          '--admin-key',
          ADMIN_KEY,
          '--allow-hosts',
          '127.0.0.1',
          '--log-level',
          'info',
          '--shutdown-timeout',
          '2s',
          '--schedule-requests-per-second',
          '1000000',
        ]);
        const node: Node = {
          process: child,
          api: (method, path, body, key) => callApi(child.url, key, method, path, body),
        };
        t = node;
        const a = await startReceiver({ behavior: flood.aBehavior, countOnly: true });
        const b = await startReceiverProcess();
        const warm = await startReceiver({ behavior: () => ({ status: 200 }) });
        receivers.push(a, b, warm);
        const aKey = await newTenantKey(node, 'a');
        const bKey = await newTenantKey(node, 'b');
        await warmUp(node, bKey, warm);
        assert.equal((await node.api('PUT', '/v1/destinations/flooded', flood.aDestination(a.url), aKey)).status, 201);
        assert.equal(
          (await node.api('PUT', '/v1/destinations/b', { url: b.url, maxConcurrency: 50 }, bKey)).status,
          201,
        );
        {
          // A's flood first; B's events fall due a few seconds after it is in (a, b), or in A's own
          // second (c). (Ingest and firing share the node's event loop: B's events due while A's
          // flood is being taken in wait behind it; see docs/architecture.md.)
          const aAt = Date.now() + flood.aLeadMs;
          const aEvents = Array.from({ length: flood.aEvents }, (_, i) => ({
            id: `a-${i}`,
            fireAt: aAt + Math.floor((i * flood.aSpreadMs) / flood.aEvents),
            destination: 'flooded',
            payload: { i },
          }));
          await sendBatches(node, aKey, aEvents);
          const bAt = Math.max(aAt, Date.now()) + flood.bOffsetMs;
          const bEvents = Array.from({ length: flood.bEvents }, (_, i) => {
            const fireAt = bAt + Math.floor((i * flood.bSpreadMs) / flood.bEvents);
            return { id: `b-${i}`, fireAt, destination: 'b', payload: { fireAt } };
          });
          await sendBatches(node, bKey, bEvents);
          assert.ok(
            Date.now() < Math.min(aAt + flood.aSpreadMs, bAt) || flood.aLeadMs === 0,
            'scheduling took longer than the lead time; the test would measure nothing',
          );
          assert.ok(Date.now() < bAt, `B's events were scheduled after their due time`);
          // A scrape resets the node's event-loop delay histogram (prom-client): from here it
          // covers the flood, not the node's start (~270 ms of module loading) or the ingest.
          await scrapeMetrics(node.process.url);

          const arrived = await b.waitForDistinct(
            flood.bEvents,
            Date.now() + flood.bOffsetMs + flood.bSpreadMs + 30_000,
          );
          assert.equal(
            arrived.distinct,
            flood.bEvents,
            `B's events delivered in time: ${arrived.distinct} of ${flood.bEvents}`,
          );
          const bStats = await b.stats();
          const lateness = bStats.latenessMs;
          const p99 = percentile(lateness, 99);
          // The event loop's delay since the scrape above: how long A's work held the loop that
          // B's timers and claims run on.
          const metrics = await scrapeMetrics(node.process.url);
          const claimed = metrics.get('belfry_events_claimed') ?? NaN;
          const parked = metrics.get('belfry_events_parked') ?? NaN;
          const loopP99 = metrics.get('belfry_nodejs_eventloop_lag_p99_seconds') ?? NaN;
          const loopMax = metrics.get('belfry_nodejs_eventloop_lag_max_seconds') ?? NaN;
          const rssPeak = peakRssBytes(child.child.pid!);
          console.log(
            `isolation flood on ${storeKind} (${flood.name}): B delivered ${bStats.distinct} (${bStats.duplicates} repeats), lateness p50 ${percentile(lateness, 50)} ms, p99 ${p99} ms, max ${Math.max(...lateness)} ms; ` +
              `A received ${a.count}; node: event loop delay during the flood p99 ${Math.round(loopP99 * 1000)} ms, max ${Math.round(loopMax * 1000)} ms, claimed ${claimed}, parked ${parked}, peak RSS ${Math.round(rssPeak / 2 ** 20)} MiB`,
          );
          // Where B's five latest deliveries spent their time: the claim's lateness (when the node
          // took the event), the attempt's duration, and the receiver's lateness.
          const slowest = lateness
            .map((l, i) => ({ l, fireAt: bStats.fireAtMs[i] }))
            .sort((x, y) => y.l - x.l)
            .slice(0, 5);
          for (const { l, fireAt } of slowest) {
            const i = bEvents.findIndex((e) => e.fireAt === fireAt);
            const trace = await node.api('GET', `/v1/events/b-${i}/transitions`, undefined, bKey);
            const claim = (trace.body.transitions ?? []).find((x: { toState: string }) => x.toState === 'executing');
            const done = (trace.body.transitions ?? []).find((x: { toState: string }) => x.toState === 'succeeded');
            console.log(
              `  B's b-${i}: received ${l} ms late; claimed ${claim?.latenessMs} ms late; attempt took ${done?.durationMs} ms`,
            );
          }
          assert.equal(bStats.unparsed, 0, 'every delivery to B carried its fireAt');
          assert.equal(bStats.early, 0, 'no event delivered before its due time');
          assert.ok(p99 <= LATENESS_P99_MS_MAX, `B's p99 lateness was ${p99} ms`);
          assert.ok(a.count > 0, 'A was delivered to');
          // A's queue holds at most its claim bound (2,000 at the most), B's its own: never the flood.
          assert.ok(claimed <= 2_000 + 2 * 50 * 25, `claimed but unrecorded events: ${claimed}`);
          assert.ok(parked <= 10_000 + flood.bEvents, `parked: ${parked}`);
          assert.ok(rssPeak < RSS_BYTES_MAX, `the node's peak RSS was ${Math.round(rssPeak / 2 ** 20)} MiB`);
        }
      });
    });
  }
