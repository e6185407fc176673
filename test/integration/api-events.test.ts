/** /v1/events over a real SQLite store, through app.inject(): create, read, edit, cancel, replay, trace. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { ADMIN_KEY, bearer, makeTestApp, moveEvent, type TestApp } from '../support/app.ts';

let t: TestApp;
let seq = 0;

before(async () => {
  t = await makeTestApp({ limits: { payloadBytesMax: 1024, bodyBytesMax: 64 * 1024, batchEventsMax: 5 } });
  const put = await t.app.inject({
    method: 'PUT',
    url: '/v1/destinations/orders',
    headers: bearer(t.tenantKey),
    payload: { url: 'https://orders.example.com/hook' },
  });
  assert.equal(put.statusCode, 201);
});
after(() => t.cleanup());

/** A request as tenant A (or `key`). */
function req(
  method: InjectOptions['method'],
  url: string,
  payload?: unknown,
  headers: Record<string, string> = {},
  key = t.tenantKey,
) {
  return t.app.inject({
    method,
    url,
    headers: { ...bearer(key), ...headers },
    ...(payload === undefined ? {} : { payload: payload as object }),
  });
}

function uniqueId(prefix = 'ev'): string {
  return `${prefix}-${++seq}`;
}

async function create(body: Record<string, unknown>, key = t.tenantKey) {
  const res = await req('POST', '/v1/events', { destination: 'orders', ...body }, {}, key);
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

function assertError(res: { statusCode: number; json(): any }, status: number, code: string, field?: string) {
  assert.equal(res.statusCode, status, JSON.stringify(res.json()));
  const { error } = res.json();
  assert.equal(error.code, code);
  assert.equal(typeof error.message, 'string');
  if (field !== undefined) assert.equal(error.details?.[0]?.field, field, JSON.stringify(error));
  return error;
}

describe('POST /v1/events', () => {
  test('creates (201), repeats idempotently (200), refuses a different body under the same id (409)', async () => {
    const id = uniqueId();
    const body = {
      id,
      fireAt: '2026-11-22T10:21:55Z',
      destination: 'orders',
      payload: { orderId: 8812 },
      headers: { 'x-kind': 'timeout' },
      group: 'order-8812',
      tags: { team: 'checkout' },
    };
    const changedBefore = t.changed.length;
    const first = await req('POST', '/v1/events', body);
    assert.equal(first.statusCode, 201);
    assert.equal(first.headers.etag, '"1"');
    const ev = first.json();
    assert.deepEqual(
      {
        id: ev.id,
        state: ev.state,
        version: ev.version,
        fireAt: ev.fireAt,
        dueAt: ev.dueAt,
        destination: ev.destination,
        payload: ev.payload,
        headers: ev.headers,
        group: ev.group,
        tags: ev.tags,
        attempts: ev.attempts,
      },
      {
        id,
        state: 'scheduled',
        version: 1,
        fireAt: '2026-11-22T10:21:55.000Z',
        dueAt: '2026-11-22T10:21:55.000Z',
        destination: 'orders',
        payload: { orderId: 8812 },
        headers: { 'x-kind': 'timeout' },
        group: 'order-8812',
        tags: { team: 'checkout' },
        attempts: 0,
      },
    );
    assert.equal(t.changed.length, changedBefore + 1);
    assert.equal(t.changed.at(-1)![0].id, id);

    // Same body, keys in another order: the same request.
    const again = await req('POST', '/v1/events', {
      tags: body.tags,
      group: body.group,
      headers: body.headers,
      payload: body.payload,
      destination: 'orders',
      fireAt: body.fireAt,
      id,
    });
    assert.equal(again.statusCode, 200);
    assert.deepEqual(again.json(), ev);
    assert.equal(t.changed.length, changedBefore + 1, 'an existing event is not announced again');

    const different = await req('POST', '/v1/events', { ...body, payload: { orderId: 1 } });
    const err = assertError(different, 409, 'conflict', 'id');
    assert.match(err.message, new RegExp(id));
  });

  test('makes a time-sortable id when none is given, and fires now without fireAt or delay', async () => {
    const a = await create({});
    const b = await create({});
    assert.match(a.id, /^[0-9a-z]{26}$/);
    assert.ok(a.id < b.id);
    assert.equal(a.fireAt, new Date(t.clock.now()).toISOString());
  });

  test('takes fireAt as epoch ms or RFC 3339 with an offset, and delay as a duration', async () => {
    const ms = Date.UTC(2026, 5, 1, 8, 30);
    assert.equal((await create({ fireAt: ms })).fireAt, '2026-06-01T08:30:00.000Z');
    assert.equal((await create({ fireAt: '2026-06-01T10:30:00+02:00' })).fireAt, '2026-06-01T08:30:00.000Z');
    assert.equal((await create({ delay: '90s' })).fireAt, new Date(t.clock.now() + 90_000).toISOString());
    assert.equal((await create({ delay: 250 })).fireAt, new Date(t.clock.now() + 250).toISOString());
  });

  test('sets expireAt from expireAfter and shows the retry policy with durations', async () => {
    const ev = await create({
      fireAt: '2026-03-01T00:00:00Z',
      expireAfter: '4h',
      retry: { maxAttempts: 3, minBackoff: '2s', maxBackoff: '1m', coefficient: 3 },
    });
    assert.equal(ev.expireAt, '2026-03-01T04:00:00.000Z');
    assert.deepEqual(ev.retry, { maxAttempts: 3, minBackoff: '2s', maxBackoff: '1m', coefficient: 3 });
    const partial = await create({ retry: { maxAttempts: 5 } });
    assert.deepEqual(partial.retry, { maxAttempts: 5, minBackoff: '1s', maxBackoff: '1h', coefficient: 2 });
    assert.equal((await create({})).retry, null);
  });

  test('takes an inline http(s) destination', async () => {
    const ev = await create({ destination: { url: 'http://127.0.0.1:9/x' } });
    assert.deepEqual(ev.destination, { url: 'http://127.0.0.1:9/x' });
  });

  test('counts scheduled events in metrics', async () => {
    const before = (await t.metrics.eventsScheduled.get()).values[0]?.value ?? 0;
    await create({});
    assert.equal((await t.metrics.eventsScheduled.get()).values[0].value, before + 1);
  });
});

describe('POST /v1/events validation: 4xx naming the field, and nothing written', () => {
  const cases: [string, unknown, number, string, string][] = [
    ['unknown field', { destination: 'orders', fireAtt: '2026-01-01T00:00:00Z' }, 400, 'invalid_request', 'fireAtt'],
    ['fireAt not a time', { destination: 'orders', fireAt: 'tomorrow' }, 400, 'invalid_request', 'fireAt'],
    [
      'fireAt a date that does not exist',
      { destination: 'orders', fireAt: '2026-02-31T00:00:00Z' },
      400,
      'invalid_request',
      'fireAt',
    ],
    ['fireAt a fraction', { destination: 'orders', fireAt: 1.5 }, 400, 'invalid_request', 'fireAt'],
    ['fireAt a huge number', { destination: 'orders', fireAt: 1e300 }, 400, 'invalid_request', 'fireAt'],
    ['fireAt an object', { destination: 'orders', fireAt: { at: 1 } }, 400, 'invalid_request', 'fireAt'],
    [
      'both fireAt and delay',
      { destination: 'orders', fireAt: '2026-01-01T00:00:00Z', delay: '5m' },
      400,
      'invalid_request',
      'delay',
    ],
    ['bad delay', { destination: 'orders', delay: '5 minutes' }, 400, 'invalid_request', 'delay'],
    ['negative delay', { destination: 'orders', delay: -5 }, 400, 'invalid_request', 'delay'],
    ['delay above 10 years', { destination: 'orders', delay: '99999d' }, 400, 'invalid_request', 'delay'],
    ['bad expireAfter', { destination: 'orders', expireAfter: '4 hours' }, 400, 'invalid_request', 'expireAfter'],
    ['missing destination', { payload: 1 }, 400, 'invalid_request', 'destination'],
    ['unknown destination', { destination: 'nope' }, 400, 'invalid_request', 'destination'],
    ['destination of a wrong type', { destination: 7 }, 400, 'invalid_request', 'destination'],
    [
      'non-http destination url',
      { destination: { url: 'ftp://example.com/x' } },
      400,
      'invalid_request',
      'destination.url',
    ],
    ['relative destination url', { destination: { url: '/hook' } }, 400, 'invalid_request', 'destination.url'],
    [
      'reserved header',
      { destination: 'orders', headers: { 'Content-Length': '5' } },
      400,
      'invalid_request',
      'headers.Content-Length',
    ],
    [
      'webhook-* header',
      { destination: 'orders', headers: { 'webhook-id': 'x' } },
      400,
      'invalid_request',
      'headers.webhook-id',
    ],
    [
      'header name with a space',
      { destination: 'orders', headers: { 'x kind': 'a' } },
      400,
      'invalid_request',
      'headers.x kind',
    ],
    [
      'header value with CRLF',
      { destination: 'orders', headers: { 'x-a': 'a\r\nx-b: c' } },
      400,
      'invalid_request',
      'headers.x-a',
    ],
    [
      'header value not a string',
      { destination: 'orders', headers: { 'x-a': 5 } },
      400,
      'invalid_request',
      'headers.x-a',
    ],
    ['id with a slash', { id: 'a/b', destination: 'orders' }, 400, 'invalid_request', 'id'],
    ['id with unicode', { id: 'café', destination: 'orders' }, 400, 'invalid_request', 'id'],
    ['id with a control character', { id: 'a\u0000b', destination: 'orders' }, 400, 'invalid_request', 'id'],
    ['id with whitespace', { id: 'a b', destination: 'orders' }, 400, 'invalid_request', 'id'],
    ['empty id', { id: '', destination: 'orders' }, 400, 'invalid_request', 'id'],
    ['id of 201 characters', { id: 'x'.repeat(201), destination: 'orders' }, 400, 'invalid_request', 'id'],
    [
      'retry.maxAttempts 0',
      { destination: 'orders', retry: { maxAttempts: 0 } },
      400,
      'invalid_request',
      'retry.maxAttempts',
    ],
    [
      'retry.maxAttempts huge',
      { destination: 'orders', retry: { maxAttempts: 1e308 } },
      400,
      'invalid_request',
      'retry.maxAttempts',
    ],
    [
      'retry.minBackoff above maxBackoff',
      { destination: 'orders', retry: { minBackoff: '2h', maxBackoff: '1h' } },
      400,
      'invalid_request',
      'retry.minBackoff',
    ],
    [
      'retry.maxBackoff above 7d',
      { destination: 'orders', retry: { maxBackoff: '8d' } },
      400,
      'invalid_request',
      'retry.maxBackoff',
    ],
    [
      'retry unknown field',
      { destination: 'orders', retry: { attempts: 3 } },
      400,
      'invalid_request',
      'retry.attempts',
    ],
    ['tags not strings', { destination: 'orders', tags: { team: 1 } }, 400, 'invalid_request', 'tags.team'],
    [
      'payload over the limit',
      { destination: 'orders', payload: 'x'.repeat(2000) },
      413,
      'payload_too_large',
      'payload',
    ],
    ['body not an object', [1, 2], 400, 'invalid_request', 'body'],
  ];
  for (const [name, body, status, code, field] of cases) {
    test(name, async () => {
      const before = (await t.store.eventList({ tenantId: t.tenantId, limit: 1000 })).events.length;
      const res = await req('POST', '/v1/events', body);
      const error = assertError(res, status, code, field);
      if (status === 400 && field !== 'body')
        assert.ok(error.message.includes(field.split('.')[0]), `message names the field: ${error.message}`);
      if (status === 413) assert.match(error.message, /1024/);
      assert.equal((await t.store.eventList({ tenantId: t.tenantId, limit: 1000 })).events.length, before);
    });
  }

  test('malformed JSON → 400, prototype poisoning → 400, wrong content type → 415, oversized body → 413', async () => {
    assertError(
      await req('POST', '/v1/events', '{"destination": ', { 'content-type': 'application/json' }),
      400,
      'invalid_request',
      'body',
    );
    assertError(
      await req('POST', '/v1/events', '{"destination":"orders","__proto__":{"x":1}}', {
        'content-type': 'application/json',
      }),
      400,
      'invalid_request',
    );
    assertError(
      await req('POST', '/v1/events', 'destination=orders', { 'content-type': 'application/x-www-form-urlencoded' }),
      415,
      'unsupported_media_type',
    );
    assertError(
      await req('POST', '/v1/events', 'hello', { 'content-type': 'text/plain' }),
      415,
      'unsupported_media_type',
    );
    const big = JSON.stringify({ destination: 'orders', payload: 'x'.repeat(70 * 1024) });
    const error = assertError(
      await req('POST', '/v1/events', big, { 'content-type': 'application/json' }),
      413,
      'payload_too_large',
    );
    assert.match(error.message, /65536/);
  });

  test('hostile JSON: deep nesting, numbers beyond a double, a very long URL → 4xx, never 5xx', async () => {
    const json = { 'content-type': 'application/json' };
    const deep = (n: number) => `{"destination":"orders","payload":${'['.repeat(n)}${']'.repeat(n)}}`;
    assertError(await req('POST', '/v1/events', deep(20_000), json), 400, 'invalid_request', 'payload');
    assert.equal((await req('POST', '/v1/events', deep(50), json)).statusCode, 201);
    assertError(
      await req('POST', '/v1/events', '{"destination":"orders","payload":{"n":1e999}}', json),
      400,
      'invalid_request',
      'payload',
    );
    const ev = await create({ id: uniqueId() });
    assertError(
      await req('PATCH', `/v1/events/${ev.id}`, `{"payload":${'['.repeat(5000)}${']'.repeat(5000)}}`, json),
      400,
      'invalid_request',
      'payload',
    );
    const long = await req('GET', `/v1/events/${'x'.repeat(5000)}`);
    assert.ok(long.statusCode >= 400 && long.statusCode < 500, String(long.statusCode));
    assert.ok(long.body.length < 1000);
  });

  test('an empty JSON body is a validation error, not a parse error', async () => {
    assertError(
      await req('POST', '/v1/events', '', { 'content-type': 'application/json' }),
      400,
      'invalid_request',
      'body',
    );
  });
});

describe('POST /v1/events/batch', () => {
  test('answers one result per item in order; invalid items are not written; valid ones in one insert', async () => {
    const existing = await create({ id: uniqueId('batch') });
    const conflicting = await create({ id: uniqueId('batch'), payload: 1 });
    const fresh = uniqueId('batch');
    const calls: number[] = [];
    const writer = t.deps.writer;
    t.deps.writer = { insert: (events) => (calls.push(events.length), writer.insert(events)) };
    try {
      const res = await req('POST', '/v1/events/batch', {
        events: [
          { id: fresh, destination: 'orders', delay: '1m' },
          { id: uniqueId('bad'), destination: 'orders', fireAt: 'soon' },
          { id: existing.id, destination: 'orders' },
          { id: conflicting.id, destination: 'orders', payload: 2 },
          { id: uniqueId('bad'), destination: 'nope' },
        ],
      });
      assert.equal(res.statusCode, 200, res.body);
      const { results } = res.json();
      assert.deepEqual(
        results.map((r: any) => r.status),
        ['created', 'error', 'existing', 'error', 'error'],
      );
      assert.equal(results[0].event.id, fresh);
      assert.equal(results[1].error.code, 'invalid_request');
      assert.equal(results[1].error.details[0].field, 'fireAt');
      assert.equal(results[2].event.id, existing.id);
      assert.equal(results[3].error.code, 'conflict');
      assert.equal(results[4].error.details[0].field, 'destination');
      assert.deepEqual(calls, [3]);
      assert.equal((await req('GET', `/v1/events/${results[0].event.id}`)).statusCode, 200);
      const bad = [results[1], results[4]];
      for (const r of bad) assert.equal(r.event, undefined);
    } finally {
      t.deps.writer = writer;
    }
  });

  test('Prefer: return=minimal answers id and version in place of each event; errors stay whole; no Prefer, no change', async () => {
    const existing = await create({ id: uniqueId('min') });
    const conflicting = await create({ id: uniqueId('min'), payload: 1 });
    const fresh = uniqueId('min');
    const events = [
      { id: fresh, destination: 'orders', delay: '1m' },
      { id: existing.id, destination: 'orders' },
      { id: conflicting.id, destination: 'orders', payload: 2 },
      { destination: 'nope' },
    ];
    const res = await req('POST', '/v1/events/batch', { events }, { prefer: 'respond-async, RETURN = "Minimal"; x=1' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['preference-applied'], 'return=minimal');
    const { results } = res.json();
    assert.deepEqual(results.slice(0, 2), [
      { status: 'created', id: fresh, version: 1 },
      { status: 'existing', id: existing.id, version: existing.version },
    ]);
    assert.equal(results[2].status, 'error');
    assert.equal(results[2].error.code, 'conflict');
    assert.equal(results[3].error.details[0].field, 'destination');
    assert.equal(
      (await req('GET', `/v1/events/${fresh}`)).json().state,
      'scheduled',
      'written as without the preference',
    );

    // Any other preference, or none, answers whole events.
    for (const prefer of [undefined, 'return=representation', 'handling=lenient', 'minimal']) {
      const again = await req(
        'POST',
        '/v1/events/batch',
        { events: [{ id: fresh, destination: 'orders', delay: '1m' }] },
        prefer === undefined ? {} : { prefer },
      );
      assert.equal(again.headers['preference-applied'], undefined, String(prefer));
      assert.deepEqual(Object.keys(again.json().results[0]), ['status', 'event'], String(prefer));
      assert.equal(again.json().results[0].event.id, fresh);
    }
  });

  test('schema errors of one item name it and its field', async () => {
    const res = await req('POST', '/v1/events/batch', {
      events: [{ destination: 'orders', extra: true }, 'not an object'],
    });
    const { results } = res.json();
    assert.equal(results[0].error.details[0].field, 'extra');
    assert.match(results[0].error.message, /^events\/0\/extra /);
    assert.equal(results[1].error.details[0].field, 'events/1');
  });

  test('refuses more than limits.batchEventsMax items, an empty list and unknown envelope fields', async () => {
    const six = Array.from({ length: 6 }, () => ({ destination: 'orders' }));
    assertError(await req('POST', '/v1/events/batch', { events: six }), 400, 'invalid_request', 'events');
    assertError(await req('POST', '/v1/events/batch', { events: [] }), 400, 'invalid_request', 'events');
    assertError(
      await req('POST', '/v1/events/batch', { events: [{ destination: 'orders' }], more: 1 }),
      400,
      'invalid_request',
      'more',
    );
  });
});

describe('GET /v1/events/{id}', () => {
  test('returns the event with its version as ETag; 404 when missing; 400 for an invalid id', async () => {
    const ev = await create({ id: uniqueId() });
    const res = await req('GET', `/v1/events/${ev.id}`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers.etag, '"1"');
    assert.deepEqual(res.json(), ev);
    assertError(await req('GET', '/v1/events/does-not-exist'), 404, 'not_found');
    assertError(await req('GET', '/v1/events/%E2%9C%93'), 400, 'invalid_request', 'id');
    assertError(await req('GET', `/v1/events/${'x'.repeat(300)}`), 400, 'invalid_request', 'id');
    assertError(await req('GET', '/v1/events/%ZZ'), 400, 'invalid_request');
  });
});

describe('PATCH /v1/events/{id}', () => {
  test('changes fireAt (keeping the expiry window), payload, headers and destination', async () => {
    const ev = await create({ id: uniqueId(), fireAt: '2026-05-01T00:00:00Z', expireAfter: '1h' });
    const res = await req('PATCH', `/v1/events/${ev.id}`, {
      fireAt: '2026-05-02T00:00:00Z',
      payload: { v: 2 },
      headers: { 'x-v': '2' },
      destination: { url: 'https://other.example/h' },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers.etag, '"2"');
    const patched = res.json();
    assert.equal(patched.fireAt, '2026-05-02T00:00:00.000Z');
    assert.equal(patched.expireAt, '2026-05-02T01:00:00.000Z');
    assert.deepEqual(patched.payload, { v: 2 });
    assert.deepEqual(patched.headers, { 'x-v': '2' });
    assert.deepEqual(patched.destination, { url: 'https://other.example/h' });
    assert.equal(t.changed.at(-1)![0].version, 2);
    const delayed = (await req('PATCH', `/v1/events/${ev.id}`, { delay: '10m' })).json();
    assert.equal(delayed.fireAt, new Date(t.clock.now() + 600_000).toISOString());
  });

  test('after an edit, repeating the original create is a conflict', async () => {
    const id = uniqueId();
    const body = { id, destination: 'orders', delay: '1h' };
    assert.equal((await req('POST', '/v1/events', body)).statusCode, 201);
    assert.equal((await req('PATCH', `/v1/events/${id}`, { delay: '2h' })).statusCode, 200);
    assertError(await req('POST', '/v1/events', body), 409, 'conflict');
  });

  test('honours If-Match: quoted or bare version; 412 when stale', async () => {
    const ev = await create({ id: uniqueId(), delay: '1h' });
    assert.equal((await req('PATCH', `/v1/events/${ev.id}`, { payload: 1 }, { 'if-match': '"1"' })).statusCode, 200);
    assert.equal((await req('PATCH', `/v1/events/${ev.id}`, { payload: 2 }, { 'if-match': '2' })).statusCode, 200);
    const stale = assertError(
      await req('PATCH', `/v1/events/${ev.id}`, { payload: 3 }, { 'if-match': '"2"' }),
      412,
      'precondition_failed',
    );
    assert.equal(stale.details[0].version, 3);
    assertError(
      await req('PATCH', `/v1/events/${ev.id}`, { payload: 3 }, { 'if-match': 'abc' }),
      400,
      'invalid_request',
      'If-Match',
    );
    assert.deepEqual((await req('GET', `/v1/events/${ev.id}`)).json().payload, 2);
  });

  test('409 naming the state once the event left scheduled; 404 when missing; 400 for bad bodies', async () => {
    const ev = await create({ id: uniqueId() });
    await moveEvent(t.store, t.tenantId, ev.id, 'executing', t.clock.now());
    const err = assertError(await req('PATCH', `/v1/events/${ev.id}`, { payload: 1 }), 409, 'conflict');
    assert.equal(err.details[0].state, 'executing');
    assertError(await req('PATCH', '/v1/events/missing-event', { payload: 1 }), 404, 'not_found');
    const other = await create({ id: uniqueId() });
    assertError(await req('PATCH', `/v1/events/${other.id}`, {}), 400, 'invalid_request');
    assertError(
      await req('PATCH', `/v1/events/${other.id}`, { fireAt: '2026-01-01T00:00:00Z', delay: '1m' }),
      400,
      'invalid_request',
      'delay',
    );
    assertError(await req('PATCH', `/v1/events/${other.id}`, { group: 'g' }), 400, 'invalid_request', 'group');
    assertError(
      await req('PATCH', `/v1/events/${other.id}`, { destination: 'nope' }),
      400,
      'invalid_request',
      'destination',
    );
    assertError(
      await req('PATCH', `/v1/events/${other.id}`, { payload: 'x'.repeat(2000) }),
      413,
      'payload_too_large',
      'payload',
    );
    assert.equal((await req('GET', `/v1/events/${other.id}`)).json().version, 1, 'nothing written');
  });
});

describe('DELETE /v1/events/{id}', () => {
  test('cancels a scheduled event (200, canceled); a second cancel is 409 canceled', async () => {
    const ev = await create({ id: uniqueId(), delay: '1h' });
    const res = await req('DELETE', `/v1/events/${ev.id}`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().state, 'canceled');
    assert.equal(res.headers.etag, '"2"');
    assert.equal(t.changed.at(-1)![0].state, 'canceled');
    const again = assertError(await req('DELETE', `/v1/events/${ev.id}`), 409, 'conflict');
    assert.deepEqual(again.details[0].state, 'canceled');
  });

  test('cancels awaiting_retry; 409 with the state for executing and succeeded', async () => {
    const retrying = await create({ id: uniqueId() });
    await moveEvent(t.store, t.tenantId, retrying.id, 'awaiting_retry', t.clock.now());
    assert.equal((await req('DELETE', `/v1/events/${retrying.id}`)).json().state, 'canceled');

    const running = await create({ id: uniqueId() });
    await moveEvent(t.store, t.tenantId, running.id, 'executing', t.clock.now());
    assert.equal(
      assertError(await req('DELETE', `/v1/events/${running.id}`), 409, 'conflict').details[0].state,
      'executing',
    );

    const done = await create({ id: uniqueId() });
    await moveEvent(t.store, t.tenantId, done.id, 'succeeded', t.clock.now());
    const err = assertError(await req('DELETE', `/v1/events/${done.id}`), 409, 'conflict');
    assert.match(err.message, /^event is already succeeded/);
    assert.equal(err.details[0].state, 'succeeded');
  });

  test('honours If-Match (412) and answers 404 when missing', async () => {
    const ev = await create({ id: uniqueId() });
    assertError(
      await req('DELETE', `/v1/events/${ev.id}`, undefined, { 'if-match': '"7"' }),
      412,
      'precondition_failed',
    );
    assert.equal((await req('DELETE', `/v1/events/${ev.id}`, undefined, { 'if-match': '"1"' })).statusCode, 200);
    assertError(await req('DELETE', '/v1/events/missing-event'), 404, 'not_found');
  });
});

describe('GET /v1/events (list)', () => {
  test('filters by state, destination, group and fireAt range; pages with a cursor, newest first', async () => {
    const key = (await makeTenantKey('lister')).key;
    const mk = (body: Record<string, unknown>) => req('POST', '/v1/events', body, {}, key);
    await req('PUT', '/v1/destinations/a', { url: 'https://a.example' }, {}, key);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await mk({
        id: `l${i}`,
        destination: i % 2 ? 'a' : { url: 'https://b.example' },
        group: i < 3 ? 'g1' : undefined,
        fireAt: Date.UTC(2026, 6, 1 + i),
      });
      assert.equal(res.statusCode, 201, res.body);
      ids.push(res.json().id);
    }
    await req('DELETE', '/v1/events/l6', undefined, {}, key);
    const list = async (q: string) => {
      const res = await req('GET', `/v1/events${q}`, undefined, {}, key);
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    };
    assert.deepEqual(
      (await list('')).events.map((e: any) => e.id),
      [...ids].reverse(),
    );
    assert.deepEqual(
      (await list('?state=canceled')).events.map((e: any) => e.id),
      ['l6'],
    );
    assert.deepEqual(
      (await list('?destination=a')).events.map((e: any) => e.id),
      ['l5', 'l3', 'l1'],
    );
    assert.deepEqual(
      (await list('?group=g1')).events.map((e: any) => e.id),
      ['l2', 'l1', 'l0'],
    );
    assert.deepEqual(
      (await list('?from=2026-07-02T00:00:00Z&to=' + Date.UTC(2026, 6, 4))).events.map((e: any) => e.id),
      ['l2', 'l1'],
    );

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: any = await list(`?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      assert.ok(page.events.length <= 3);
      seen.push(...page.events.map((e: any) => e.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    assert.deepEqual(seen, [...ids].reverse());
    assert.equal(pages, 3);
  });

  test('refuses bad query values and unknown parameters', async () => {
    for (const [q, field] of [
      ['?limit=0', 'limit'],
      ['?limit=1001', 'limit'],
      ['?limit=ten', 'limit'],
      ['?state=done', 'state'],
      ['?from=yesterday', 'from'],
      ['?to=2026-13-01T00:00:00Z', 'to'],
      ['?cursor=%21%21', 'cursor'],
      ['?sort=asc', 'sort'],
      ['?state=scheduled&state=canceled', 'state'],
    ]) {
      assertError(await req('GET', `/v1/events${q}`), 400, 'invalid_request', field);
    }
  });
});

describe('GET /v1/events/{id}/transitions and POST /v1/events/{id}/replay', () => {
  test('the trace shows creation, edits and state changes with RFC 3339 times', async () => {
    const ev = await create({ id: uniqueId(), delay: '1h' });
    await req('PATCH', `/v1/events/${ev.id}`, { delay: '2h' });
    await req('DELETE', `/v1/events/${ev.id}`);
    const res = await req('GET', `/v1/events/${ev.id}/transitions`);
    assert.equal(res.statusCode, 200);
    const { transitions } = res.json();
    assert.deepEqual(
      transitions.map((x: any) => [x.kind, x.toState]),
      [
        ['created', 'scheduled'],
        ['updated', 'scheduled'],
        ['state', 'canceled'],
      ],
    );
    for (const x of transitions) assert.match(x.at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.equal(res.json().nextCursor, null, 'the whole trace fits the default page');
    assertError(await req('GET', '/v1/events/missing-event/transitions'), 404, 'not_found');
  });

  test('pages a trace longer than a page with nextCursor: every transition once, in order', async () => {
    const ev = await create({ id: uniqueId(), delay: '1h' });
    for (let k = 0; k < 6; k++)
      assert.equal((await req('PATCH', `/v1/events/${ev.id}`, { delay: `${2 + k}h` })).statusCode, 200);
    const seqs: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await req(
        'GET',
        `/v1/events/${ev.id}/transitions?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      assert.equal(res.statusCode, 200, res.body);
      seqs.push(...res.json().transitions.map((x: any) => x.seq));
      cursor = res.json().nextCursor;
      pages++;
    } while (cursor && pages < 10);
    assert.deepEqual(seqs, [1, 2, 3, 4, 5, 6, 7]);
    assert.equal(pages, 3);
    for (const [q, field] of [
      ['?limit=0', 'limit'],
      ['?limit=1001', 'limit'],
      ['?cursor=%21%21', 'cursor'],
      ['?from=1', 'from'],
    ]) {
      assertError(await req('GET', `/v1/events/${ev.id}/transitions${q}`), 400, 'invalid_request', field);
    }
  });

  test('replays an archived or discarded event; 409 otherwise', async () => {
    const ev = await create({ id: uniqueId() });
    assert.equal(
      assertError(await req('POST', `/v1/events/${ev.id}/replay`), 409, 'conflict').details[0].state,
      'scheduled',
    );
    await moveEvent(t.store, t.tenantId, ev.id, 'archived', t.clock.now());
    const res = await req('POST', `/v1/events/${ev.id}/replay`);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().state, 'scheduled');
    assert.equal(res.json().attempts, 0);
    assert.equal(t.changed.at(-1)![0].state, 'scheduled');

    const discarded = await create({ id: uniqueId() });
    await moveEvent(t.store, t.tenantId, discarded.id, 'discarded', t.clock.now());
    const withBody = await req('POST', `/v1/events/${discarded.id}/replay`, '', { 'content-type': 'application/json' });
    assert.equal(withBody.statusCode, 200, withBody.body);
    assertError(await req('POST', '/v1/events/missing-event/replay'), 404, 'not_found');
  });
});

describe('tenant isolation', () => {
  test("tenant B never sees or touches tenant A's events", async () => {
    const ev = await create({ id: uniqueId('iso'), delay: '1h' });
    const b = t.tenantKeyB;
    assertError(await req('GET', `/v1/events/${ev.id}`, undefined, {}, b), 404, 'not_found');
    assertError(await req('PATCH', `/v1/events/${ev.id}`, { payload: 1 }, {}, b), 404, 'not_found');
    assertError(await req('DELETE', `/v1/events/${ev.id}`, undefined, {}, b), 404, 'not_found');
    assertError(await req('GET', `/v1/events/${ev.id}/transitions`, undefined, {}, b), 404, 'not_found');
    assertError(await req('POST', `/v1/events/${ev.id}/replay`, undefined, {}, b), 404, 'not_found');
    const listed = (await req('GET', '/v1/events?limit=1000', undefined, {}, b)).json().events.map((e: any) => e.id);
    assert.ok(!listed.includes(ev.id));
    // A's destination name means nothing to B.
    assertError(
      await req('POST', '/v1/events', { destination: 'orders' }, {}, b),
      400,
      'invalid_request',
      'destination',
    );
    // The same id is B's own.
    const mine = await req('POST', '/v1/events', { id: ev.id, destination: { url: 'https://b.example' } }, {}, b);
    assert.equal(mine.statusCode, 201);
    assert.equal((await req('GET', `/v1/events/${ev.id}`)).json().state, 'scheduled');
    assert.equal((await req('GET', `/v1/events/${ev.id}`)).json().destination, 'orders');
  });
});

async function makeTenantKey(name: string): Promise<{ id: string; key: string }> {
  const admin = bearer(ADMIN_KEY);
  const tenant = (await t.app.inject({ method: 'POST', url: '/v1/tenants', headers: admin, payload: { name } })).json();
  const key = (await t.app.inject({ method: 'POST', url: `/v1/tenants/${tenant.id}/keys`, headers: admin })).json();
  return { id: tenant.id, key: key.key };
}
