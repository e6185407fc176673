/**
 * OutcomeRecorder against a store stub whose failures the test chooses (the store is the remote
 * party here): which failures are retried, and that a poison batch is set aside and recorded one
 * outcome at a time instead of stopping the node. Time is a SimClock: a retry is a timer.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { SimClock } from '../core/clock.ts';
import { Metrics } from '../node/metrics.ts';
import { StoreUnavailableError, type AttemptOutcome, type EventRecordAttemptsParams } from '../store/store.ts';
import {
  OutcomeRecorder,
  RECORD_BATCH_LOADED,
  RECORD_CONFLICT_RETRIES_MAX,
  RECORD_INTERVAL_MS_MIN,
  recordRetryDelayMs,
  type RecordedOutcome,
} from './recorder.ts';

/** Bound on the simulated retries a test drives before it gives up. */
const ADVANCES_MAX = 500;

function outcome(id: string): AttemptOutcome {
  return { tenantId: 't', id, version: 2, owner: 'n', to: 'succeeded', durationMs: 1 };
}

function withCode(code: string): Error {
  return Object.assign(new Error(`store said ${code}`), { code });
}

interface Harness {
  recorder: OutcomeRecorder<string>;
  clock: SimClock;
  metrics: Metrics;
  /** The ids of every eventRecordAttempts call, in order. */
  calls: string[][];
  /** Every onRecorded call: ids with whether each applied. */
  recorded: [string, boolean][][];
  logs: { msg: string; id?: string }[];
}

/** `fail(ids, callIndex)` returns the error the store throws for that call, or null to succeed. */
function harness(fail: (ids: string[], callIndex: number) => unknown): Harness {
  const clock = new SimClock();
  const metrics = new Metrics();
  const calls: string[][] = [];
  const recorded: [string, boolean][][] = [];
  const logs: { msg: string; id?: string }[] = [];
  const store = {
    eventRecordAttempts: async (params: EventRecordAttemptsParams): Promise<boolean[]> => {
      const ids = params.outcomes.map((o) => o.id);
      calls.push(ids);
      const err = fail(ids, calls.length - 1);
      if (err) throw err;
      return ids.map(() => true);
    },
  };
  const logger = pino({ level: 'error' }, { write: (line: string) => logs.push(JSON.parse(line)) });
  const onRecorded = (batch: RecordedOutcome<string>[], applied: boolean[]) =>
    recorded.push(batch.map((b, i) => [b.context, applied[i]]));
  const recorder = new OutcomeRecorder<string>(store, clock, onRecorded, logger, metrics);
  return { recorder, clock, metrics, calls, recorded, logs };
}

/**
 * Adds the outcomes, then flushes; with `advance`, moves the SimClock over every retry's backoff,
 * without, a retry would never end. Bounded either way.
 */
async function recordAll(h: Harness, ids: string[], opts: { advance: boolean }): Promise<void> {
  for (const id of ids) h.recorder.add(outcome(id), id);
  let done = false;
  const flushed = h.recorder.flush().then(() => {
    done = true;
  });
  for (let i = 0; i < ADVANCES_MAX && !done; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    if (opts.advance && !done) await h.clock.advance(recordRetryDelayMs(Number.MAX_SAFE_INTEGER));
  }
  assert.ok(
    done,
    `the recorder did not finish within ${ADVANCES_MAX} turns${opts.advance ? ' and simulated retries' : ' without the clock moving'}`,
  );
  await flushed;
}

async function count(counter: { get(): Promise<{ values: { value: number }[] }> }): Promise<number> {
  return (await counter.get()).values[0]?.value ?? 0;
}

describe('OutcomeRecorder', () => {
  it('sets aside a batch the store refuses for good, records its outcomes one by one, and drops only the poison one', async () => {
    const h = harness((ids) => (ids.includes('poison') ? withCode('23514') : null));
    await recordAll(h, ['a', 'poison', 'b'], { advance: false });
    assert.deepEqual(h.calls, [['a', 'poison', 'b'], ['a'], ['poison'], ['b']], 'no retry of a permanent failure');
    assert.deepEqual(h.recorded, [[['a', true]], [['poison', false]], [['b', true]]]);
    assert.equal(await count(h.metrics.outcomeBatchesSetAside), 1);
    assert.equal(await count(h.metrics.outcomesDropped), 1);
    assert.ok(h.logs.some((l) => l.msg.startsWith('recording delivery outcomes failed; set the batch aside')));
    assert.ok(
      h.logs.some((l) => l.msg.startsWith('recording a delivery outcome failed; dropped') && l.id === 'poison'),
    );
  });

  it('keeps retrying the whole batch while the store is unavailable, past the bound on lost races', async () => {
    const outageCalls = RECORD_CONFLICT_RETRIES_MAX * 3;
    const h = harness((_ids, call) =>
      call < outageCalls ? new StoreUnavailableError('PostgreSQL unavailable: ECONNREFUSED') : null,
    );
    await recordAll(h, ['a', 'b'], { advance: true });
    assert.equal(h.calls.length, outageCalls + 1);
    assert.ok(
      h.calls.every((ids) => ids.length === 2),
      'every try was the whole batch',
    );
    assert.deepEqual(h.recorded, [
      [
        ['a', true],
        ['b', true],
      ],
    ]);
    assert.equal(await count(h.metrics.outcomeBatchesSetAside), 0);
    assert.equal(await count(h.metrics.outcomesDropped), 0);
  });

  for (const code of ['40001', '40P01', '57P01', 'SQLITE_BUSY']) {
    it(`retries the whole batch after a lost race (${code}) with a growing backoff`, async () => {
      const h = harness((_ids, call) => (call < 2 ? withCode(code) : null));
      await recordAll(h, ['a', 'b'], { advance: true });
      assert.deepEqual(h.calls, [
        ['a', 'b'],
        ['a', 'b'],
        ['a', 'b'],
      ]);
      assert.deepEqual(h.recorded, [
        [
          ['a', true],
          ['b', true],
        ],
      ]);
      assert.equal(await count(h.metrics.outcomeBatchesSetAside), 0);
    });
  }

  it('sets a batch aside after RECORD_CONFLICT_RETRIES_MAX lost races, and drops outcomes that keep losing alone', async () => {
    const h = harness(() => withCode('SQLITE_BUSY'));
    await recordAll(h, ['a', 'b'], { advance: true });
    const triesEach = RECORD_CONFLICT_RETRIES_MAX + 1;
    assert.equal(h.calls.length, triesEach * 3, 'the batch, then each outcome, tried a bounded number of times');
    assert.deepEqual(h.recorded, [[['a', false]], [['b', false]]]);
    assert.equal(await count(h.metrics.outcomeBatchesSetAside), 1);
    assert.equal(await count(h.metrics.outcomesDropped), 2);
  });

  /** A store whose commits each wait until the test releases them. */
  function gatedHarness() {
    const clock = new SimClock();
    const metrics = new Metrics();
    const calls: { ids: string[]; release: () => void }[] = [];
    const store = {
      eventRecordAttempts: (params: EventRecordAttemptsParams) =>
        new Promise<boolean[]>((resolve) =>
          calls.push({
            ids: params.outcomes.map((o) => o.id),
            release: () => resolve(params.outcomes.map(() => true)),
          }),
        ),
    };
    const recorded: string[] = [];
    const recorder = new OutcomeRecorder<string>(
      store,
      clock,
      (batch) => recorded.push(...batch.map((b) => b.context)),
      pino({ level: 'silent' }),
      metrics,
    );
    return { clock, metrics, calls, recorded, recorder };
  }
  const turns = async (n: number) => {
    for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
  };

  it('after a small batch, commits what finished meanwhile as soon as the commit ends, without the interval', async () => {
    const h = gatedHarness();
    h.recorder.add(outcome('a'), 'a');
    await turns(2);
    h.recorder.add(outcome('b'), 'b');
    await turns(2);
    assert.deepEqual(
      h.calls.map((c) => c.ids),
      [['a']],
      'one commit at a time',
    );
    h.calls[0].release();
    await turns(3);
    assert.deepEqual(
      h.calls.map((c) => c.ids),
      [['a'], ['b']],
      'b went when a committed, the clock unmoved',
    );
    h.calls[1].release();
    await h.recorder.flush();
    assert.deepEqual(h.recorded, ['a', 'b']);
    const window = (await h.metrics.outcomeUnrecordedSeconds.get()).values.find((v) =>
      v.metricName?.endsWith('_count'),
    );
    assert.equal(window?.value, 2, 'each commit observed the window of its outcomes');
  });

  it('after a large batch (outcomes keep coming), waits for the interval so outcomes share the next commit', async () => {
    const h = gatedHarness();
    const big = Array.from({ length: RECORD_BATCH_LOADED }, (_, i) => `e${i}`);
    for (const id of big) h.recorder.add(outcome(id), id);
    await turns(2);
    h.recorder.add(outcome('x'), 'x');
    h.calls[0].release();
    await turns(3);
    assert.equal(h.calls.length, 1, 'the next commit waits for the interval');
    h.recorder.add(outcome('y'), 'y');
    await h.clock.advance(RECORD_INTERVAL_MS_MIN);
    await turns(3);
    assert.deepEqual(
      h.calls.map((c) => c.ids.length),
      [RECORD_BATCH_LOADED, 2],
      'x and y shared the next commit',
    );
    h.calls[1].release();
    await h.recorder.flush();
    assert.equal(h.recorded.length, RECORD_BATCH_LOADED + 2);
  });

  it('backs off from 100 ms, doubling, to at most 5 s', () => {
    assert.deepEqual([0, 1, 2, 5, 6, 7, 1_000].map(recordRetryDelayMs), [100, 200, 400, 3_200, 5_000, 5_000, 5_000]);
  });
});
