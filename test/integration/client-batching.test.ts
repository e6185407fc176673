/**
 * The SDK's automatic batching against a real node (in this process, SQLite in a temp dir):
 * concurrent creates go out as one POST /v1/events/batch (requests counted); each caller gets what
 * its own POST /v1/events gives (its event and created flag, or the very same BelfryApiError: bad
 * bodies of every kind, a conflict, an over-limit payload, a refused key, the pending quota);
 * a batch whose answer is lost is sent again with the same bytes and makes each event once; the
 * tenant's batchEventsMax and the node's body limit are learned from the node's refusals and the
 * batch split; `batching: false` sends one request per create.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { BelfryApiError, BelfryClient, type BelfryClientOptions, type EventCreate } from '@belfry/client';
import { startAnswerDroppingProxy } from '../support/answer-dropping-proxy.ts';
import { ADMIN_KEY, startTestNode, waitUntil, type TestNode } from '../support/node.ts';

let node: TestNode;
/** Every request a client of this file made: `METHOD /path`. */
const requested: string[] = [];
const recordingFetch: typeof fetch = (input, init) => {
  requested.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
  return fetch(input, init);
};
const client = (apiKey: string, extra: Partial<BelfryClientOptions> = {}, baseUrl = node.url) =>
  new BelfryClient({ baseUrl, apiKey, fetch: recordingFetch, ...extra });

/** Counts the creates and batches made while `run` runs. */
async function counting<T>(run: () => Promise<T>): Promise<{ result: T; batches: number; singles: number }> {
  const from = requested.length;
  const result = await run();
  const made = requested.slice(from);
  return {
    result,
    batches: made.filter((r) => r === 'POST /v1/events/batch').length,
    singles: made.filter((r) => r === 'POST /v1/events').length,
  };
}

/** What a promise settled with: the value, or the error's fields a caller reads. */
async function outcome(p: Promise<unknown>) {
  try {
    return { ok: await p };
  } catch (err) {
    assert.ok(err instanceof BelfryApiError, `a BelfryApiError, not ${String(err)}`);
    const { status, code, message, details, body, attempts } = err;
    return { error: { status, code, message, details, body, attempts } };
  }
}

/** A tenant of its own (admin API) with `limits`, its key and a destination `later`. */
async function tenantWith(name: string, limits: Record<string, number> = {}): Promise<{ id: string; key: string }> {
  const admin = client(ADMIN_KEY, { batching: false });
  const made = await admin.tenants.create({ name });
  if (Object.keys(limits).length > 0) await admin.tenants.patch(made.id, { limits });
  const key = (await admin.tenants.createKey(made.id)).key;
  await client(key).destinations.put('later', { url: 'http://127.0.0.1:9/never' });
  return { id: made.id, key };
}

const later = (extra: Partial<EventCreate> = {}): EventCreate => ({
  destination: 'later',
  delay: '1h',
  payload: { n: 1 },
  ...extra,
});

before(async () => {
  node = await startTestNode();
  await client(node.tenantKey).destinations.put('later', { url: 'http://127.0.0.1:9/never' });
});
after(() => node.close());

describe('@belfry/client batching against a real node', () => {
  test('concurrent creates go out as one batch; each caller gets its own event', async () => {
    const belfry = client(node.tenantKey);
    const { result, batches, singles } = await counting(() =>
      Promise.all(
        Array.from({ length: 40 }, (_, n) =>
          n % 2 === 0
            ? belfry.events.create(later({ payload: { n }, group: 'batched' }))
            : belfry.events.createWithOutcome(later({ payload: { n }, group: 'batched' })),
        ),
      ),
    );
    assert.deepEqual({ batches, singles }, { batches: 1, singles: 0 });
    const events = result.map((r, n) => {
      const event = 'created' in r ? r.event : r;
      if ('created' in r) assert.equal(r.created, true);
      assert.deepEqual(event.payload, { n }, 'each caller gets its own event');
      return event;
    });
    assert.equal(new Set(events.map((e) => e.id)).size, 40);
    for (const e of events.slice(0, 3)) assert.deepEqual(await belfry.events.get(e.id), e, 'the stored event');
  });

  test('a lone create goes at once as a single create', async () => {
    const { result, batches, singles } = await counting(() => client(node.tenantKey).events.createWithOutcome(later()));
    assert.deepEqual({ batches, singles, created: result.created }, { batches: 0, singles: 1, created: true });
  });

  test('a bad item rejects only its caller, with the very error its single create gets', async () => {
    const { key: small } = await tenantWith('batch-errors', { payloadBytesMax: 1_024 });
    const taken = await client(small).events.create(later({ id: 'taken', payload: { first: true } }));
    const bad: EventCreate[] = [
      later({ fireAt: true as never }),
      later({ bogus: 1 } as never),
      later({ fireAt: Date.now() + 60_000 }),
      later({ destination: 'nowhere' }),
      later({ destination: { url: 'http://10.1.2.3/hook' } }),
      later({ id: 'has space' }),
      later({ delay: '1 fortnight' }),
      later({ headers: { 'bad header': 'x' } }),
      later({ type: '-leading-dash' }),
      later({ id: taken.id, payload: { first: false } }),
      later({ payload: { big: 'x'.repeat(2_000) } }),
      later({ retry: { maxAttempts: -1 } }),
    ];
    const expected = [];
    const one = client(small, { batching: false });
    for (const body of bad) expected.push(await outcome(one.events.create(body)));
    for (const e of expected) assert.ok('error' in e, `${JSON.stringify(e)} is an error`);

    const belfry = client(small);
    const { result, batches, singles } = await counting(() =>
      Promise.all([
        outcome(belfry.events.createWithOutcome(later({ payload: { good: 1 } }))),
        ...bad.map((body) => outcome(belfry.events.create(body))),
        outcome(belfry.events.createWithOutcome(later({ payload: { good: 2 } }))),
      ]),
    );
    assert.deepEqual({ batches, singles }, { batches: 1, singles: 0 });
    assert.deepEqual(result.slice(1, -1), expected);
    for (const [i, r] of [result[0], result[result.length - 1]].entries()) {
      assert.ok('ok' in r);
      assert.deepEqual((r.ok as { event: { payload: unknown } }).event.payload, { good: i + 1 });
    }
  });

  test('a refused key rejects every caller with the 401 its single create gets', async () => {
    const expected = await outcome(client('bk_not-a-key', { batching: false }).events.create(later()));
    const belfry = client('bk_not-a-key');
    const { result, batches } = await counting(() =>
      Promise.all([1, 2, 3].map(() => outcome(belfry.events.create(later())))),
    );
    assert.equal(batches, 1);
    assert.equal((expected as { error: { status: number } }).error.status, 401);
    for (const r of result) assert.deepEqual(r, expected);
  });

  test('a batch whose answer was lost is sent again with the same bytes: each event made once', async () => {
    const proxy = await startAnswerDroppingProxy(node.url, 'POST /v1/events/batch');
    try {
      const belfry = client(node.tenantKey, { retry: { backoffMsMax: 50 } }, proxy.url);
      const outcomes = await Promise.all(
        [0, 1, 2, 3, 4].map((n) => belfry.events.createWithOutcome(later({ group: 'batch-lost', payload: { n } }))),
      );
      assert.equal(proxy.bodies.length, 2, 'sent twice');
      assert.equal(proxy.bodies[0], proxy.bodies[1], 'the same bytes: the same client-made ids');
      assert.deepEqual(
        outcomes.map((o) => o.created),
        [false, false, false, false, false],
        'the second try found what the first made',
      );
      const stored = await client(node.tenantKey).events.listPage({ group: 'batch-lost' });
      assert.deepEqual(stored.events.map((e) => e.id).sort(), outcomes.map((o) => o.event.id).sort(), 'one each');
    } finally {
      await proxy.close();
    }
  });

  test('two creates of one id never share a batch: one makes it, the other finds it', async () => {
    const belfry = client(node.tenantKey);
    const body = later({ id: 'twice-in-a-turn' });
    const [a, b] = await Promise.all([belfry.events.createWithOutcome(body), belfry.events.createWithOutcome(body)]);
    assert.deepEqual([a.created, b.created].sort(), [false, true]);
    assert.deepEqual(a.event, b.event);
  });

  test('maxEvents bounds a batch', async () => {
    const belfry = client(node.tenantKey, { batching: { maxEvents: 4, maxDelayMs: 5 } });
    const { result, batches, singles } = await counting(() =>
      Promise.all(Array.from({ length: 10 }, (_, n) => belfry.events.create(later({ payload: { n } })))),
    );
    assert.deepEqual({ batches, singles }, { batches: 3, singles: 0 });
    assert.equal(new Set(result.map((e) => e.id)).size, 10);
  });

  test("the tenant's lower batchEventsMax is learned from its refusal, and the batch split", async () => {
    const { key } = await tenantWith('batch-max-3', { batchEventsMax: 3 });
    const belfry = client(key);
    const first = await counting(() =>
      Promise.all(Array.from({ length: 7 }, (_, n) => belfry.events.create(later({ payload: { n } })))),
    );
    assert.deepEqual(
      first.result.map((e) => e.payload),
      Array.from({ length: 7 }, (_, n) => ({ n })),
    );
    assert.deepEqual(
      { batches: first.batches, singles: first.singles },
      { batches: 3, singles: 1 },
      '7 refused; 3, 3, 1',
    );
    const next = await counting(() =>
      Promise.all(Array.from({ length: 5 }, (_, n) => belfry.events.create(later({ payload: { n } })))),
    );
    assert.deepEqual({ batches: next.batches, singles: next.singles }, { batches: 2, singles: 0 }, '3 and 2 at once');
  });

  test('over the pending quota, each caller is answered as one by one: a repeat of a stored id is found, new ones refused', async () => {
    const { id, key } = await tenantWith('batch-quota');
    const stored = await client(key).events.create(later({ id: 'kept' }));
    await client(ADMIN_KEY).tenants.patch(id, { limits: { pendingEventsMax: 0 } });
    const one = client(key, { batching: false });
    // The quota reads an estimate made in the background: wait until it refuses a new event.
    await waitUntil(
      'the quota refuses a new event',
      async () =>
        ((await outcome(one.events.create(later()))) as { error?: { code: string } }).error?.code === 'quota_exceeded',
      10_000,
    );
    const expected = await outcome(one.events.create(later({ id: 'new-1' })));
    const belfry = client(key);
    const { result, batches, singles } = await counting(() =>
      Promise.all([
        outcome(belfry.events.createWithOutcome(later({ id: 'kept' }))),
        outcome(belfry.events.create(later({ id: 'new-1' }))),
        outcome(belfry.events.create(later({ id: 'new-2' }))),
      ]),
    );
    assert.deepEqual({ batches, singles }, { batches: 1, singles: 3 }, 'the batch refused, then one by one');
    assert.deepEqual(result[0], { ok: { event: stored, created: false } });
    assert.deepEqual(result[1], expected);
    assert.equal((result[2] as { error: { code: string } }).error.code, 'quota_exceeded');
  });

  test('batching: false sends each create on its own', async () => {
    const belfry = client(node.tenantKey, { batching: false });
    const { batches, singles } = await counting(() =>
      Promise.all([0, 1, 2, 3, 4].map((n) => belfry.events.create(later({ payload: { n } })))),
    );
    assert.deepEqual({ batches, singles }, { batches: 0, singles: 5 });
  });

  test('bad batching options are refused when the client is made', () => {
    assert.throws(() => client(node.tenantKey, { batching: { maxEvents: 0 } }), /maxEvents/);
    assert.throws(() => client(node.tenantKey, { batching: { maxEvents: 1e9 } }), /maxEvents/);
    assert.throws(() => client(node.tenantKey, { batching: { maxDelayMs: -1 } }), /maxDelayMs/);
  });
});

describe('@belfry/client batching against a node with a small body limit', () => {
  let small: TestNode;
  before(async () => {
    small = await startTestNode({}, { limits: { bodyBytesMax: 128 * 1024 } });
    await client(small.tenantKey, {}, small.url).destinations.put('later', { url: 'http://127.0.0.1:9/never' });
  });
  after(() => small.close());

  test("a batch over the node's body limit (413) is split, and the limit learned", async () => {
    const belfry = client(small.tenantKey, {}, small.url);
    const payload = (n: number) => ({ n, pad: 'x'.repeat(10 * 1024) });
    const first = await counting(() =>
      Promise.all(Array.from({ length: 30 }, (_, n) => belfry.events.create(later({ payload: payload(n) })))),
    );
    assert.deepEqual(
      first.result.map((e) => (e.payload as { n: number }).n),
      Array.from({ length: 30 }, (_, n) => n),
    );
    assert.ok(first.batches >= 3, `refused, then split (${first.batches} batches)`);
    const next = await counting(() =>
      Promise.all(Array.from({ length: 30 }, (_, n) => belfry.events.create(later({ payload: payload(n) })))),
    );
    assert.equal(next.singles, 0);
    assert.equal(next.batches, 3, 'packed within the learned limit at once: 12, 12 and 6 events of 10 KiB');
  });
});
