/**
 * Group commit bounded by payload bytes (src/store/group-commit.ts): five of the largest accepted
 * batches that wait for the store together are committed in transactions of one batch each, not
 * merged, so no single store insert (synchronous on SQLite in process) holds the event loop for
 * several of them.
 *
 * The store holds its inserts until all five batches are with the committer (a disk that fell
 * behind for a moment): without that, whether requests meet in the queue depends on how their
 * parsing interleaves. The event loop is watched from the moment the store goes on until every
 * batch is answered.
 *
 * Prints the measurements, the old behaviour (no bound in bytes) and the default side by side:
 * `node --import tsx --test --test-reporter=spec test/slow/group-commit-bytes.test.ts`
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { bodyBytesMaxOf } from '../../src/api/body-limits.ts';
import { DEFAULT_API_LIMITS } from '../../src/api/deps.ts';
import { GROUP_COMMIT_PAYLOAD_BYTES_MAX, GroupCommitter } from '../../src/store/group-commit.ts';
import type { EventInsertManyParams, EventInsertResult } from '../../src/store/store.ts';
import { bearer, makeTestApp, type TestApp } from '../support/app.ts';
import { waitUntil } from '../support/node.ts';
import { largestBatch, postBatch, putOrdersDestination } from '../support/batch-bodies.ts';
import { watchLoop } from '../support/loop-watch.ts';

const BATCH_LIMIT = bodyBytesMaxOf('batch', DEFAULT_API_LIMITS, Infinity);
const BATCHES = 5;

interface Transaction {
  events: number;
  payloadBytes: number;
  ms: number;
}

/** Five largest batches at once through a test app whose committer has `payloadBytesMax` per transaction. */
function run(label: string, payloadBytesMax: number | undefined) {
  let t: TestApp;
  let writer: GroupCommitter;
  const transactions: Transaction[] = [];
  /** Events in inserts that wait for the gate. */
  let heldEvents = 0;
  let gate: Promise<void> = Promise.resolve();
  const result: { delayMaxMs: number; ms: number; transactions: Transaction[] } = {
    delayMaxMs: NaN,
    ms: NaN,
    transactions,
  };

  before(async () => {
    t = await makeTestApp({
      limits: { scheduleRequestsPerSecond: 1_000_000 },
      writer: (store, clock) => {
        const timed = {
          async eventInsertMany(params: EventInsertManyParams): Promise<EventInsertResult[]> {
            heldEvents += params.events.length;
            await gate;
            // Each held insert goes on a turn of its own, as it would have without the gate.
            await new Promise((resolve) => setImmediate(resolve));
            const t0 = performance.now();
            const results = await store.eventInsertMany(params);
            const payloadBytes = params.events.reduce((sum, e) => sum + Buffer.byteLength(e.payload), 0);
            transactions.push({ events: params.events.length, payloadBytes, ms: performance.now() - t0 });
            return results;
          },
        };
        writer = new GroupCommitter(
          timed,
          () => clock.now(),
          payloadBytesMax === undefined ? {} : { transactionPayloadBytesMax: payloadBytesMax },
        );
        return writer;
      },
    });
    await putOrdersDestination(t);
  });
  after(() => t.cleanup());

  const post = (body: string) => postBatch(t, body);

  test(`${label}: five of the largest batches that wait for the store together are all created`, async () => {
    // Warm up: code and schemas compiled, store statements prepared.
    assert.equal((await post(largestBatch('warm', BATCH_LIMIT / 4))).statusCode, 200);
    transactions.length = 0;
    heldEvents = 0;
    let open!: () => void;
    gate = new Promise((resolve) => (open = resolve));
    const bodies = Array.from({ length: BATCHES }, (_, b) => largestBatch(`b${b}`, BATCH_LIMIT));
    const answers = Promise.all(bodies.map(post));
    await waitUntil(
      'every batch is with the committer',
      () => heldEvents + writer.pendingEvents === BATCHES * 1_000,
      30_000,
    );
    const watched = await watchLoop(async () => {
      open();
      return answers;
    });
    for (const res of watched.result) {
      assert.equal(res.statusCode, 200, res.body.slice(0, 300));
      assert.equal(res.json().results.filter((r: { status: string }) => r.status === 'created').length, 1_000);
    }
    assert.equal(
      transactions.reduce((sum, x) => sum + x.events, 0),
      BATCHES * 1_000,
    );
    for (let b = 0; b < BATCHES; b++) assert.ok(await t.store.eventGet({ tenantId: t.tenantId, id: `b${b}-0999` }));
    result.delayMaxMs = watched.delayMaxMs;
    result.ms = watched.ms;
    const insertMax = Math.max(...transactions.map((x) => x.ms));
    const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(2);
    console.log(
      `${label}: ${BATCHES} batches of ${BATCH_LIMIT} bytes committed and answered in ${watched.ms.toFixed(0)} ms; ${transactions.length} transactions ` +
        `(events ${transactions.map((x) => x.events).join('/')}, payload MiB ${transactions.map((x) => mib(x.payloadBytes)).join('/')}); ` +
        `longest insert ${insertMax.toFixed(0)} ms; event loop delay max ${watched.delayMaxMs.toFixed(1)} ms`,
    );
  });
  return result;
}

describe('group commit, no bound in bytes (the behaviour before)', () => {
  const before = run('unbounded', Infinity);
  test('merges the batches that wait together into one transaction', () => {
    assert.ok(
      before.transactions.some((x) => x.events > 1_000),
      `transactions of ${before.transactions.map((x) => x.events)} events`,
    );
  });
});

describe(`group commit, default bound (${GROUP_COMMIT_PAYLOAD_BYTES_MAX} payload bytes per transaction)`, () => {
  const bounded = run('default bound', undefined);
  test('commits each batch in a transaction of its own: a batch never shares one past the bound', () => {
    assert.equal(bounded.transactions.length, BATCHES);
    for (const x of bounded.transactions) assert.equal(x.events, 1_000);
    // Generous, for a shared 2-core machine: see the numbers printed, and docs/operations.md.
    assert.ok(bounded.delayMaxMs < 250, `the event loop was held ${bounded.delayMaxMs.toFixed(0)} ms`);
  });
});
