import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import type { EventRecord } from '../core/event.ts';
import { isoTime, toEventJson } from './event-json.ts';
import { EventBatchResponse } from './schemas/events.ts';

describe('isoTime', () => {
  it('matches Date.prototype.toISOString at the edges of days, years and its fast range', () => {
    const cases = [
      0,
      1,
      999,
      1_000,
      59_999,
      86_399_999,
      86_400_000,
      -0,
      Date.UTC(2000, 1, 29, 23, 59, 59, 999),
      Date.UTC(2000, 2, 1),
      Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
      Date.UTC(10000, 0, 1),
      -1,
      -86_400_001,
      1.5,
      8.64e15,
      -8.64e15,
    ];
    for (const ms of cases) assert.equal(isoTime(ms), new Date(ms).toISOString(), `ms ${ms}`);
  });

  it('matches toISOString for random times, repeated and interleaved across days', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 20_000; i++) {
      const ms = Math.floor(random() * Date.UTC(10000, 0, 1));
      for (const t of [ms, ms, ms + 86_400_000, ms]) assert.equal(isoTime(t), new Date(t).toISOString(), `ms ${t}`);
    }
  });

  it('throws for a time Date cannot show, as toISOString does', () => {
    assert.throws(() => isoTime(Number.NaN), RangeError);
    assert.throws(() => isoTime(8.64e15 + 1), RangeError);
  });
});

const T = Date.UTC(2026, 10, 22, 10, 21, 55, 7);

function event(over: Partial<EventRecord> = {}): EventRecord {
  return {
    tenantId: 't_1',
    id: 'e-1',
    shard: 3,
    seq: 9,
    state: 'scheduled',
    version: 1,
    fireAt: T + 86_400_000,
    dueAt: T + 86_400_000,
    destination: { name: 'orders' },
    queue: 'name:orders',
    payload: '{"orderId":8812}',
    headers: {},
    group: null,
    retry: null,
    expireAt: null,
    tags: {},
    type: null,
    attempts: 0,
    lastStatus: null,
    lastError: null,
    requestHash: '',
    createdAt: T,
    updatedAt: T,
    leaseOwner: null,
    leaseUntil: null,
    ...over,
  };
}

describe('batch results as JSON text', () => {
  it('JSON.stringify writes exactly what the EventBatchResponse schema serialiser writes (POST /v1/events/batch relies on it)', async () => {
    const payloads = [
      JSON.stringify({ a: [1, 2.5, -0, 1e21, null, true], 'k"\\\n': 'é\u2028😀\u0007', '2': 'x', '1': { deep: {} } }),
      'null',
      '"text"',
      '12.75',
      '[]',
      'not json {',
    ];
    const events = [
      ...payloads.map((payload, i) => event({ id: `e-${i}`, payload })),
      event({
        id: 'ü-"quoted"',
        destination: { url: 'https://example.com/hook?x="1"' },
        headers: { 'x-a': 'b"c', 'X-B': 'é' },
        group: 'g:1',
        retry: { maxAttempts: 12, minBackoffMs: 1_000, maxBackoffMs: 3_600_000, coefficient: 1.5 },
        expireAt: T + 4 * 3_600_000,
        tags: { team: 'checkout', '7': 'seven' },
        fireAt: T - 1,
        dueAt: T + 5,
      }),
      event({
        state: 'awaiting_retry',
        version: 4,
        attempts: 2,
        lastStatus: 503,
        lastError: 'HTTP 503: "down"\n',
        updatedAt: T + 999,
      }),
    ];
    // Built as createBatch builds them.
    const results = [
      ...events.map((e, i) => ({ status: i % 2 === 0 ? 'created' : 'existing', event: toEventJson(e) })),
      {
        status: 'error',
        error: {
          code: 'invalid_request',
          message: 'events/3: must be "x"',
          details: [{ field: 'events/3/delay', message: 'bad', limit: 'x' }],
        },
      },
      {
        status: 'error',
        error: { code: 'conflict', message: 'exists', details: [{ field: 'id', state: 'scheduled', version: 2 }] },
      },
    ];
    const app = Fastify();
    app.get('/', { schema: { response: { 200: EventBatchResponse } } }, async () => ({ results }));
    const res = await app.inject({ method: 'GET', url: '/' });
    await app.close();
    assert.equal(res.statusCode, 200);
    assert.equal(JSON.stringify({ results }), res.body);
  });
});
