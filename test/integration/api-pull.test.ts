/**
 * Pull delivery through the API, on both stores: claim, ack, nack, extend, expiry, receipts,
 * group order, long polls, tenant isolation, and 4xx for bad input (which changes nothing).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import pino from 'pino';
import { bearer, TEST_BACKENDS, type TestApp } from '../support/app.ts';
import { PullExpirer } from '../../src/pull/expirer.ts';
import { waitUntil } from '../support/node.ts';
import type { Store } from '../../src/store/store.ts';

for (const [backend, make] of TEST_BACKENDS) {
  describe(`pull delivery API (${backend})`, () => {
    let t: TestApp<Store>;
    before(async () => {
      t = await make();
      assert.equal(
        (
          await req('PUT', '/v1/destinations/jobs', {
            kind: 'pull',
            retry: { minBackoff: '1s', maxBackoff: '1s', maxAttempts: 3 },
          })
        ).statusCode,
        201,
      );
      assert.equal(
        (await req('PUT', '/v1/destinations/hook', { url: 'https://orders.example.com/hook' })).statusCode,
        201,
      );
    });
    after(() => t.cleanup());

    function req(method: InjectOptions['method'], url: string, payload?: unknown, key?: string) {
      return t.app.inject({
        method,
        url,
        headers: bearer(key ?? t.tenantKey),
        ...(payload === undefined ? {} : { payload: payload as object }),
      });
    }
    const claim = (body: Record<string, unknown> = {}, name = 'jobs', key?: string) =>
      req('POST', `/v1/destinations/${name}/claim`, body, key);
    async function schedule(id: string, o: Record<string, unknown> = {}) {
      const res = await req('POST', '/v1/events', { id, destination: 'jobs', delay: 0, payload: { n: id }, ...o });
      assert.equal(res.statusCode, 201, res.body);
    }
    async function state(id: string, key?: string) {
      return (await req('GET', `/v1/events/${id}`, undefined, key)).json();
    }
    async function trace(id: string): Promise<string[]> {
      const res = await req('GET', `/v1/events/${id}/transitions`);
      return res
        .json()
        .transitions.map(
          (x: { kind: string; toState: string; detail: { pull?: string } | null }) => x.detail?.pull ?? x.kind,
        );
    }

    test('a pull destination is shown with its kind, and cannot change between pull and push', async () => {
      const got = (await req('GET', '/v1/destinations/jobs')).json();
      assert.equal(got.kind, 'pull');
      assert.equal(got.secret, undefined);
      const change = await req('PUT', '/v1/destinations/jobs', { url: 'https://x.example.com/' });
      assert.equal(change.statusCode, 409, change.body);
      assert.equal((await req('GET', '/v1/destinations/jobs')).json().kind, 'pull');
      assert.equal((await req('PUT', '/v1/destinations/hook', { kind: 'pull' })).statusCode, 409);
      assert.equal(
        (await req('PUT', '/v1/destinations/jobs2', { kind: 'pull', url: 'https://x.example.com/' })).statusCode,
        400,
        'a pull body has no url',
      );
    });

    test('claims due events with receipts, once; ack makes them succeeded; a repeated ack is 409; each step is traced', async () => {
      await schedule('a1', { type: 'order.timeout', headers: { 'x-k': 'v' } });
      await schedule('a2');
      const res = await claim({ max: 10, visibilityTimeout: '30s' });
      assert.equal(res.statusCode, 200, res.body);
      const events = res.json().events;
      assert.deepEqual(events.map((e: { id: string }) => e.id).sort(), ['a1', 'a2']);
      const a1 = events.find((e: { id: string }) => e.id === 'a1');
      assert.deepEqual(a1.payload, { n: 'a1' });
      assert.equal(a1.type, 'order.timeout');
      assert.deepEqual(a1.headers, { 'x-k': 'v' });
      assert.equal(a1.attempt, 1);
      assert.equal(typeof a1.receipt, 'string');
      assert.equal(Date.parse(a1.visibleUntil), t.clock.now() + 30_000);
      assert.equal((await state('a1')).state, 'executing');
      assert.deepEqual((await claim()).json().events, [], 'claimed events are not handed out again');
      const ack = await req('POST', '/v1/events/a1/ack', { receipt: a1.receipt });
      assert.equal(ack.statusCode, 200, ack.body);
      assert.equal(ack.json().state, 'succeeded');
      const again = await req('POST', '/v1/events/a1/ack', { receipt: a1.receipt });
      assert.equal(again.statusCode, 409);
      assert.match(again.json().error.message, /receipt/);
      assert.deepEqual(await trace('a1'), ['created', 'claim', 'ack']);
      const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      assert.match(metrics, /belfry_pull_claimed_total [1-9]/);
      assert.match(metrics, /belfry_pull_ended_total\{action="ack",state="succeeded"\} [1-9]/);
      const a2 = events.find((e: { id: string }) => e.id === 'a2');
      assert.equal((await req('POST', '/v1/events/a2/ack', { receipt: a2.receipt })).statusCode, 200);
    });

    test('nack retries after retryAfter (then a new receipt; the old one is 409) or discards', async () => {
      await schedule('n1');
      const [c1] = (await claim()).json().events;
      const nack = await req('POST', '/v1/events/n1/nack', { receipt: c1.receipt, retryAfter: '10s', reason: 'busy' });
      assert.equal(nack.statusCode, 200, nack.body);
      assert.equal(nack.json().state, 'awaiting_retry');
      assert.equal(nack.json().lastError, 'busy');
      assert.equal(Date.parse(nack.json().dueAt), t.clock.now() + 10_000);
      assert.deepEqual((await claim()).json().events, [], 'not before retryAfter');
      await t.clock.advance(10_000);
      const [c2] = (await claim()).json().events;
      assert.equal(c2.id, 'n1');
      assert.equal(c2.attempt, 2);
      assert.notEqual(c2.receipt, c1.receipt);
      assert.equal(
        (await req('POST', '/v1/events/n1/ack', { receipt: c1.receipt })).statusCode,
        409,
        "the older claim's receipt",
      );
      assert.equal((await state('n1')).state, 'executing');
      const discard = await req('POST', '/v1/events/n1/nack', { receipt: c2.receipt, discard: true });
      assert.equal(discard.json().state, 'discarded');
      assert.deepEqual(await trace('n1'), ['created', 'claim', 'nack', 'claim', 'nack']);
    });

    test('settles many claims in one request (acks then nacks, results in order); a claim carries acks of earlier ones', async () => {
      for (const id of ['s1', 's2', 's3', 's4']) await schedule(id);
      const claimed = (await claim({ max: 10 })).json().events as { id: string; receipt: string }[];
      const by = (id: string) => claimed.find((e) => e.id === id)!;
      assert.deepEqual(claimed.map((e) => e.id).sort(), ['s1', 's2', 's3', 's4']);
      const res = await req('POST', '/v1/events/settle', {
        ack: [
          { id: 's1', receipt: by('s1').receipt },
          { id: 's2', receipt: 'not-the-receipt' },
        ],
        nack: [{ id: 's3', receipt: by('s3').receipt, retryAfter: '5s', reason: 'later' }],
      });
      assert.equal(res.statusCode, 200, res.body);
      const results = res.json().results;
      assert.deepEqual(
        results.map((r: { id: string; status: string; state?: string; error?: { code: string } }) => [
          r.id,
          r.status,
          r.state ?? r.error?.code,
        ]),
        [
          ['s1', 'settled', 'succeeded'],
          ['s2', 'error', 'conflict'],
          ['s3', 'settled', 'awaiting_retry'],
        ],
      );
      assert.equal((await state('s1')).state, 'succeeded');
      assert.equal((await state('s2')).state, 'executing', 'a receipt that does not hold changes nothing');
      const s3 = await state('s3');
      assert.equal(s3.lastError, 'later');
      assert.equal(Date.parse(s3.dueAt), t.clock.now() + 5_000);
      assert.deepEqual(await trace('s1'), ['created', 'claim', 'ack']);
      assert.deepEqual(await trace('s3'), ['created', 'claim', 'nack']);

      // A claim with `ack`: the acks apply first, then it claims; `settled` says what became of each.
      await schedule('s5');
      const next = await claim({
        ack: [
          { id: 's2', receipt: by('s2').receipt },
          { id: 's4', receipt: by('s4').receipt },
          { id: 's1', receipt: by('s1').receipt },
        ],
      });
      assert.equal(next.statusCode, 200, next.body);
      assert.deepEqual(
        next.json().settled.map((r: { id: string; status: string }) => [r.id, r.status]),
        [
          ['s2', 'settled'],
          ['s4', 'settled'],
          ['s1', 'error'],
        ],
      );
      assert.deepEqual(
        next.json().events.map((e: { id: string }) => e.id),
        ['s5'],
      );
      assert.equal((await state('s4')).state, 'succeeded');
      const noAcks = await claim({});
      assert.equal(noAcks.json().settled, undefined, 'a claim without ack has no settled');
      const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      assert.match(metrics, /belfry_pull_ended_total\{action="nack",state="awaiting_retry"\} [1-9]/);
      const [s5] = next.json().events;
      assert.equal(
        (await req('POST', '/v1/events/settle', { ack: [{ id: 's5', receipt: s5.receipt }] })).statusCode,
        200,
      );
    });

    test('refuses a bad settle request with a 400 naming the field, and changes nothing', async () => {
      await schedule('sb');
      const [c] = (await claim({ max: 1 })).json().events;
      assert.equal(c.id, 'sb');
      const cases: [Record<string, unknown>, RegExp][] = [
        [{}, /ack/],
        [{ ack: [], nack: [] }, /ack/],
        [{ ack: [{ id: 'sb' }] }, /receipt/],
        [{ ack: [{ id: 'sb', receipt: c.receipt, extra: 1 }] }, /extra|additional/],
        [{ ack: [{ id: 'has space', receipt: c.receipt }] }, /id/],
        [{ nack: [{ id: 'sb', receipt: c.receipt, retryAfter: 'later' }] }, /nack\[0\]\.retryAfter/],
        [{ nack: [{ id: 'sb', receipt: c.receipt, retryAfter: '1s', discard: true }] }, /retryAfter/],
        [{ ack: [{ id: 'sb', receipt: c.receipt }], nack: [{ id: 'sb', receipt: c.receipt }] }, /named twice/],
        [{ ack: Array.from({ length: 1_001 }, (_, i) => ({ id: `x${i}`, receipt: 'r' })) }, /ack/],
        [
          {
            ack: Array.from({ length: 600 }, (_, i) => ({ id: `x${i}`, receipt: 'r' })),
            nack: Array.from({ length: 401 }, (_, i) => ({ id: `y${i}`, receipt: 'r' })),
          },
          /at most 1000/,
        ],
        [{ other: [] }, /other|additional/],
      ];
      for (const [body, field] of cases) {
        const res = await req('POST', '/v1/events/settle', body);
        assert.equal(res.statusCode, 400, `${JSON.stringify(body).slice(0, 200)}: ${res.body}`);
        assert.match(JSON.stringify(res.json().error), field, JSON.stringify(body).slice(0, 200));
      }
      for (const body of [
        {
          ack: [
            { id: 'sb', receipt: c.receipt },
            { id: 'sb', receipt: c.receipt },
          ],
        },
        { ack: [{ id: 'sb' }] },
      ]) {
        const res = await claim(body);
        assert.equal(res.statusCode, 400, res.body);
      }
      assert.equal((await claim({ ack: [{ id: 'sb', receipt: c.receipt }] }, 'nope')).statusCode, 404);
      assert.equal((await state('sb')).state, 'executing', 'nothing settled by a refused request');
      assert.equal((await req('POST', `/v1/events/sb/ack`, { receipt: c.receipt })).statusCode, 200);
    });

    test('extend moves the visibility timeout; an expired claim is a failed attempt by the retry policy, then archived', async () => {
      await schedule('x1');
      const [c1] = (await claim({ visibilityTimeout: '2s' })).json().events;
      const ext = await req('POST', '/v1/events/x1/extend', { receipt: c1.receipt, visibilityTimeout: '5s' });
      assert.equal(ext.statusCode, 200, ext.body);
      assert.equal(Date.parse(ext.json().visibleUntil), t.clock.now() + 5_000);
      assert.equal(
        (await req('POST', '/v1/events/x1/extend', { receipt: 'not-it', visibilityTimeout: '5s' })).statusCode,
        409,
      );
      const expirer = new PullExpirer({
        store: t.store,
        clock: t.clock,
        logger: pino({ level: 'silent' }),
        random: () => 0.5,
        events: { pullSettled: () => {} },
      });
      await t.clock.advance(4_000);
      await expirer.runOnce();
      assert.equal((await state('x1')).state, 'executing', 'the extended claim holds');
      await t.clock.advance(2_000);
      await expirer.runOnce();
      const expired = await state('x1');
      assert.equal(expired.state, 'awaiting_retry');
      assert.equal(expired.lastError, 'visibility timeout expired');
      assert.equal(
        (await req('POST', '/v1/events/x1/ack', { receipt: c1.receipt })).statusCode,
        409,
        'an expired receipt',
      );
      // The destination allows 3 attempts: two more claims that expire, and the event is archived.
      for (let attempt = 2; attempt <= 3; attempt++) {
        await t.clock.advance(1_000);
        const [c] = (await claim({ visibilityTimeout: '1s' })).json().events;
        assert.equal(c.attempt, attempt);
        await t.clock.advance(1_001);
        await expirer.runOnce();
      }
      assert.equal((await state('x1')).state, 'archived');
      assert.deepEqual(await trace('x1'), [
        'created',
        'claim',
        'extend',
        'expire',
        'claim',
        'expire',
        'claim',
        'expire',
      ]);
    });

    test('times visibility by monotonic time: a step of the wall clock neither expires a claim nor stretches it', async () => {
      await schedule('step1');
      const [c1] = (await claim({ visibilityTimeout: '10s' })).json().events;
      const expirer = new PullExpirer({
        store: t.store,
        clock: t.clock,
        leaseClock: t.deps.leaseClock,
        logger: pino({ level: 'silent' }),
        random: () => 0.5,
        events: { pullSettled: () => {} },
      });
      t.clock.jump(3_600_000);
      await expirer.runOnce();
      assert.equal((await state('step1')).state, 'executing', "an hour's step forward ends no claim");
      t.clock.jump(-7_200_000);
      await t.clock.advance(10_001);
      await expirer.runOnce();
      assert.equal(
        (await state('step1')).state,
        'awaiting_retry',
        'a step back stretches no claim: it ends 10 s later',
      );
      t.clock.jump(3_600_000);
      assert.equal((await req('POST', '/v1/events/step1/ack', { receipt: c1.receipt })).statusCode, 409);
      assert.equal(
        (await req('DELETE', '/v1/events/step1')).statusCode,
        200,
        'canceled: later tests claim nothing of it',
      );
    });

    test('keeps group order: the next event of a group is claimable only after the previous one is terminal', async () => {
      await schedule('g1', { group: 'grp' });
      await t.clock.advance(1);
      await schedule('g2', { group: 'grp' });
      const first = (await claim()).json().events;
      assert.deepEqual(
        first.map((e: { id: string }) => e.id),
        ['g1'],
      );
      assert.deepEqual((await claim()).json().events, []);
      await req('POST', '/v1/events/g1/ack', { receipt: first[0].receipt });
      const second = (await claim()).json().events;
      assert.deepEqual(
        second.map((e: { id: string }) => e.id),
        ['g2'],
      );
      await req('POST', '/v1/events/g2/ack', { receipt: second[0].receipt });
    });

    test('filters by type', async () => {
      await schedule('t1', { type: 'a.x' });
      await schedule('t2', { type: 'b.y' });
      const got = (await claim({ types: ['b.y'] })).json().events;
      assert.deepEqual(
        got.map((e: { id: string }) => e.id),
        ['t2'],
      );
      const rest = (await claim()).json().events;
      assert.deepEqual(
        rest.map((e: { id: string }) => e.id),
        ['t1'],
      );
      for (const e of [...got, ...rest]) await req('POST', `/v1/events/${e.id}/ack`, { receipt: e.receipt });
    });

    test('a parked claim returns as soon as an event of its queue is scheduled; parked claims are bounded per tenant', async () => {
      const waiters = t.deps.pullWaiters!;
      // The simulated clock never moves here: only the wake-up of the write can end these waits.
      const parked = [claim({ wait: '20s' }), claim({ wait: '20s' })];
      await waitUntil('two claims parked', () => waiters.sleepingCount === 2, 10_000);
      const third = await claim({ wait: '20s' });
      assert.equal(third.statusCode, 429, third.body);
      assert.match(third.json().error.message, /waiting/);
      const noWait = await claim();
      assert.equal(noWait.statusCode, 200, 'a claim without wait is never refused for parking');
      await schedule('w1');
      await schedule('w2');
      const got = (await Promise.all(parked)).flatMap((r) => {
        assert.equal(r.statusCode, 200);
        return r.json().events;
      });
      // Both woke; one or both took the events (each event once).
      const ids = got.map((e: { id: string }) => e.id).sort();
      const rest = (await claim()).json().events;
      assert.deepEqual([...ids, ...rest.map((e: { id: string }) => e.id)].sort(), ['w1', 'w2']);
      for (const e of [...got, ...rest])
        assert.equal((await req('POST', `/v1/events/${e.id}/ack`, { receipt: e.receipt })).statusCode, 200);
      assert.equal(waiters.parkedCount, 0);
    });

    test('isolates tenants: another tenant cannot claim, ack, nack, settle or extend', async () => {
      await schedule('iso');
      assert.equal((await claim({}, 'jobs', t.tenantKeyB)).statusCode, 404, 'B has no destination "jobs"');
      assert.equal((await req('PUT', '/v1/destinations/jobs', { kind: 'pull' }, t.tenantKeyB)).statusCode, 201);
      assert.deepEqual((await claim({}, 'jobs', t.tenantKeyB)).json().events, [], "B's jobs is not A's");
      const [c] = (await claim()).json().events;
      for (const action of ['ack', 'nack', 'extend']) {
        const res = await req(
          'POST',
          `/v1/events/iso/${action}`,
          { receipt: c.receipt, ...(action === 'extend' ? { visibilityTimeout: '5s' } : {}) },
          t.tenantKeyB,
        );
        assert.equal(res.statusCode, 409, `${action}: ${res.body}`);
      }
      const settle = await req(
        'POST',
        '/v1/events/settle',
        { ack: [{ id: 'iso', receipt: c.receipt }], nack: [{ id: 'other', receipt: c.receipt }] },
        t.tenantKeyB,
      );
      assert.deepEqual(
        settle.json().results.map((r: { status: string; error?: { code: string } }) => [r.status, r.error?.code]),
        [
          ['error', 'conflict'],
          ['error', 'conflict'],
        ],
        "B's settle of A's event",
      );
      const riding = await claim({ ack: [{ id: 'iso', receipt: c.receipt }] }, 'jobs', t.tenantKeyB);
      assert.equal(riding.json().settled[0].error.code, 'conflict', "B's claim carrying an ack of A's event");
      const mine = await state('iso');
      assert.equal(mine.state, 'executing');
      assert.equal(mine.version, 2);
      assert.equal((await req('POST', '/v1/events/iso/ack', { receipt: c.receipt })).statusCode, 200);
    });

    test('refuses bad input with a 400 naming the field, and changes nothing', async () => {
      await schedule('bad');
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ max: 0 }, /max/],
        [{ max: 101 }, /max/],
        [{ max: 1.5 }, /max/],
        [{ visibilityTimeout: '0s' }, /visibilityTimeout/],
        [{ visibilityTimeout: '13h' }, /visibilityTimeout/],
        [{ visibilityTimeout: 'soon' }, /visibilityTimeout/],
        [{ wait: '21s' }, /wait/],
        [{ wait: -1 }, /wait/],
        [{ types: [] }, /types/],
        [{ types: ['has space'] }, /types/],
        [{ types: Array.from({ length: 11 }, (_, i) => `t${i}`) }, /types/],
        [{ other: 1 }, /other|additional/],
      ];
      for (const [body, field] of cases) {
        const res = await claim(body);
        assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
        assert.match(JSON.stringify(res.json().error), field, JSON.stringify(body));
      }
      assert.equal((await claim({}, 'hook')).statusCode, 409, 'a webhook destination');
      assert.equal((await claim({}, 'nope')).statusCode, 404);
      assert.equal((await state('bad')).state, 'scheduled', 'nothing claimed by a refused request');
      const [c] = (await claim()).json().events;
      const bad: [string, Record<string, unknown>][] = [
        ['ack', {}],
        ['ack', { receipt: '' }],
        ['ack', { receipt: c.receipt, extra: 1 }],
        ['nack', { receipt: c.receipt, retryAfter: 'later' }],
        ['nack', { receipt: c.receipt, retryAfter: '8d' }],
        ['nack', { receipt: c.receipt, retryAfter: '1s', discard: true }],
        ['extend', { receipt: c.receipt }],
        ['extend', { receipt: c.receipt, visibilityTimeout: '1ms' }],
      ];
      for (const [action, body] of bad) {
        const res = await req('POST', `/v1/events/bad/${action}`, body);
        assert.equal(res.statusCode, 400, `${action} ${JSON.stringify(body)}: ${res.body}`);
      }
      assert.equal((await req('POST', '/v1/events/nosuch/ack', { receipt: c.receipt })).statusCode, 409);
      const stored = await state('bad');
      assert.equal(stored.state, 'executing');
      assert.equal(stored.version, 2, 'no refused request changed the event');
      assert.equal((await req('POST', '/v1/events/bad/ack', { receipt: c.receipt })).statusCode, 200);
    });
  });
}
