/**
 * SourceIngest over a real SQLite store: derived ids, batches, a message accepted or refused whole,
 * the tenant's limits, idempotent redelivery, conflicts; messages bounded by the batch route's
 * limit and large ones parsed in slices.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SystemClock } from '../core/clock.ts';
import type { SourceRecord } from '../store/sources.ts';
import { ADMIN_KEY, bearer, makeTestApp, sourceIngestOf, type TestApp } from '../../test/support/app.ts';
import { bodyBytesMaxOf } from './body-limits.ts';
import { DEFAULT_API_LIMITS } from './deps.ts';
import { NATIVE_PARSE_CHARS_MAX } from './json-slices.ts';
import type { SourceIngest } from './source-ingest.ts';
import { watchLoop } from '../../test/support/loop-watch.ts';

let t: TestApp;
let ingest: SourceIngest;
let source: SourceRecord;
let created = 0;

before(async () => {
  t = await makeTestApp({ limits: { batchEventsMax: 3, payloadBytesMax: 100 } });
  const res = await t.app.inject({
    method: 'PUT',
    url: '/v1/destinations/hooks',
    headers: bearer(t.tenantKey),
    payload: { url: 'http://127.0.0.1:9/hook' },
  });
  assert.equal(res.statusCode, 201);
  const clock = new SystemClock();
  ingest = sourceIngestOf(t, clock, 1_000, (events) => (created += events.length));
  const put = await t.store.sourcePut({
    tenantId: t.tenantId,
    name: 'src',
    perTenantMax: 10,
    now: 0,
    spec: {
      kind: 'kafka',
      brokers: ['127.0.0.1:9092'],
      topic: 't',
      groupId: 'g',
      deadLetterTopic: null,
      start: 'earliest',
      sasl: null,
      ssl: false,
    },
  });
  assert.equal(put.kind, 'created');
  source = put.kind === 'created' ? put.source : (undefined as never);
});
after(() => t.cleanup());

const msg = (offset: number, value: unknown, partition = 0) => ({
  partition,
  offset: String(offset),
  value: Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
});

describe('SourceIngest', () => {
  it('stores one event or a batch per message, with derived ids where none is given, and again creates nothing', async () => {
    const messages = [
      msg(7, { destination: 'hooks', payload: { a: 1 } }),
      msg(
        8,
        {
          events: [
            { destination: 'hooks', payload: { b: 1 } },
            { id: 'mine', destination: 'hooks', delay: '1h', payload: { b: 2 } },
          ],
        },
        1,
      ),
    ];
    const before = created;
    assert.deepEqual(await ingest.ingest(source, messages), [
      { kind: 'accepted', created: 1 },
      { kind: 'accepted', created: 2 },
    ]);
    assert.equal(created - before, 3);
    for (const id of ['src:0:7:0', 'src:1:8:0', 'mine'])
      assert.ok(await t.store.eventGet({ tenantId: t.tenantId, id }), id);
    assert.deepEqual(
      await ingest.ingest(source, messages),
      [
        { kind: 'accepted', created: 0 },
        { kind: 'accepted', created: 0 },
      ],
      'read again: nothing new',
    );
    assert.equal(created - before, 3);
  });

  it('refuses a message whole, naming what is wrong, and writes none of its events', async () => {
    const cases: [unknown, RegExp][] = [
      ['{"destination": ', /not JSON/],
      ['', /no value/],
      [{ destination: 'hooks', payload: 1, extra: true }, /body\/extra/],
      [{ destination: 'nowhere' }, /destination/],
      [{ destination: 'hooks', fireAt: 'tomorrow' }, /fireAt/],
      [{ destination: 'hooks', payload: 'x'.repeat(200) }, /payloadBytesMax/],
      [{ events: [{ destination: 'hooks' }, { destination: 'hooks', bad: 1 }] }, /events\/1\/bad/],
      [{ events: [{ destination: 'hooks' }, { destination: 'nowhere' }] }, /events\/1: destination/],
      [{ events: Array.from({ length: 4 }, () => ({ destination: 'hooks' })) }, /batchEventsMax/],
      [{ events: [] }, /empty/],
      ['x'.repeat(1_001), /bodyBytesMax/],
    ];
    let offset = 100;
    for (const [value, reason] of cases) {
      const o = offset++;
      const [outcome] = await ingest.ingest(source, [msg(o, value)]);
      assert.equal(outcome.kind, 'rejected', JSON.stringify(value).slice(0, 80));
      assert.match(outcome.kind === 'rejected' ? outcome.reason : '', reason);
      assert.equal(await t.store.eventGet({ tenantId: t.tenantId, id: `src:0:${o}:0` }), null);
    }
  });

  it('refuses a message whose id is used by another body; the others of the chunk go on', async () => {
    const out = await ingest.ingest(source, [
      msg(200, { id: 'mine', destination: 'hooks', payload: { other: true } }),
      msg(201, { destination: 'hooks' }),
    ]);
    assert.equal(out[0].kind, 'rejected');
    assert.match(out[0].kind === 'rejected' ? out[0].reason : '', /conflict: id "mine"/);
    assert.deepEqual(out[1], { kind: 'accepted', created: 1 });
  });
});

describe("SourceIngest: large messages (a tenant with the default limits, the node's 64 MiB bodyBytesMax)", () => {
  const BATCH_LIMIT = bodyBytesMaxOf('batch', DEFAULT_API_LIMITS, Infinity);
  let big: SourceIngest;
  let bigSource: SourceRecord;

  before(async () => {
    // Tenant B back to the default limits (this file's node has batchEventsMax 3, payloadBytesMax 100).
    const patch = await t.app.inject({
      method: 'PATCH',
      url: `/v1/tenants/${t.tenantIdB}`,
      headers: bearer(ADMIN_KEY),
      payload: {
        limits: {
          batchEventsMax: DEFAULT_API_LIMITS.batchEventsMax,
          payloadBytesMax: DEFAULT_API_LIMITS.payloadBytesMax,
        },
      },
    });
    assert.equal(patch.statusCode, 200, patch.body);
    const dest = await t.app.inject({
      method: 'PUT',
      url: '/v1/destinations/hooks',
      headers: bearer(t.tenantKeyB),
      payload: { url: 'http://127.0.0.1:9/hook' },
    });
    assert.equal(dest.statusCode, 201);
    const clock = new SystemClock();
    big = sourceIngestOf(t, clock, DEFAULT_API_LIMITS.bodyBytesMax, () => {});
    const put = await t.store.sourcePut({
      tenantId: t.tenantIdB,
      name: 'big',
      perTenantMax: 10,
      now: 0,
      spec: {
        kind: 'kafka',
        brokers: ['127.0.0.1:9092'],
        topic: 't',
        groupId: 'g',
        deadLetterTopic: null,
        start: 'earliest',
        sasl: null,
        ssl: false,
      },
    });
    bigSource = put.kind === 'created' ? put.source : assert.fail('source not created');
  });

  it("refuses a message one byte over the batch route's limit (not the node's 64 MiB), naming it; accepts one at the limit", async () => {
    assert.equal(BATCH_LIMIT, 4_358_144);
    const over = Buffer.from(JSON.stringify({ destination: 'hooks', payload: 1 }).padEnd(BATCH_LIMIT + 1, ' '));
    const atLimit = Buffer.from(JSON.stringify({ destination: 'hooks', payload: 2 }).padEnd(BATCH_LIMIT, ' '));
    const [refused, accepted] = await big.ingest(bigSource, [
      { partition: 0, offset: '1', value: over },
      { partition: 0, offset: '2', value: atLimit },
    ]);
    assert.equal(refused.kind, 'rejected');
    assert.match(
      refused.kind === 'rejected' ? refused.reason : '',
      /^payload_too_large: a message of 4358145 bytes: over the limit of 4358144 bytes .*batchEventsMax × 4096 \+ payloadBytesMax/,
    );
    assert.deepEqual(accepted, { kind: 'accepted', created: 1 });
    assert.equal(await t.store.eventGet({ tenantId: t.tenantIdB, id: 'big:0:1:0' }), null);
    assert.ok(await t.store.eventGet({ tenantId: t.tenantIdB, id: 'big:0:2:0' }));
  });

  it('parses a large message in slices: the same events as one JSON.parse, and a flood of items refused without holding the event loop', async () => {
    // 1,000 events of object payloads, about 4 MiB: the value of each is what JSON.parse gives.
    const items = Array.from({ length: 1_000 }, (_, i) => ({
      id: `sliced-${i}`,
      destination: 'hooks',
      delay: '1h',
      payload: { i, rows: Array.from({ length: 170 }, (_, k) => ({ k, v: 'abcdef' })) },
    }));
    const large = JSON.stringify({ events: items });
    assert.ok(large.length > NATIVE_PARSE_CHARS_MAX && large.length <= BATCH_LIMIT, `${large.length} characters`);
    const [outcome] = await big.ingest(bigSource, [{ partition: 0, offset: '10', value: Buffer.from(large) }]);
    assert.deepEqual(outcome, { kind: 'accepted', created: 1_000 });
    for (const i of [0, 499, 999]) {
      const e = await t.store.eventGet({ tenantId: t.tenantIdB, id: `sliced-${i}` });
      assert.deepEqual(JSON.parse(e!.payload), items[i].payload);
    }

    // A message of {} items at the limit: one JSON.parse of it holds the loop hundreds of ms.
    const flood = Buffer.from(`{"events":[${'{},'.repeat(Math.floor((BATCH_LIMIT - 20) / 3) - 1)}{}]}`);
    const t0 = performance.now();
    JSON.parse(flood.toString('utf8'));
    const nativeMs = performance.now() - t0;
    const watched = await watchLoop(() => big.ingest(bigSource, [{ partition: 0, offset: '11', value: flood }]));
    const [refused] = watched.result;
    assert.equal(refused.kind, 'rejected');
    assert.match(
      refused.kind === 'rejected' ? refused.reason : '',
      /^invalid_request: events: more than 1000 events in one message.*batchEventsMax/,
    );
    console.log(
      `a ${flood.length}-byte message of {} items: refused in ${watched.ms.toFixed(0)} ms, event loop held at most ${watched.cpuHeldMaxMs.toFixed(1)} ms of CPU, ${watched.delayMaxMs.toFixed(1)} ms of wall-clock time (one JSON.parse of it: ${nativeMs.toFixed(0)} ms)`,
    );
    assert.ok(
      watched.cpuHeldMaxMs < Math.max(100, nativeMs / 2),
      `event loop held ${watched.cpuHeldMaxMs.toFixed(1)} ms of CPU (one JSON.parse: ${nativeMs.toFixed(0)} ms)`,
    );
  });

  it("refuses what the API's parser refuses, small or large: a __proto__ key", async () => {
    const small = Buffer.from('{"destination":"hooks","payload":{"__proto__":{"x":1}}}');
    const large = Buffer.from(
      `{"events":[${Array.from({ length: 600 }, () => `{"destination":"hooks","payload":{"pad":"${'p'.repeat(500)}","__proto__":{"x":1}}}`).join(',')}]}`,
    );
    assert.ok(large.length > NATIVE_PARSE_CHARS_MAX);
    const outcomes = await big.ingest(bigSource, [
      { partition: 0, offset: '20', value: small },
      { partition: 0, offset: '21', value: large },
    ]);
    const reasons = outcomes.map((o) => (o.kind === 'rejected' ? o.reason : 'accepted'));
    assert.match(reasons[0], /not JSON: .*prototype/);
    assert.match(reasons[1], /not JSON/);
    assert.equal(await t.store.eventGet({ tenantId: t.tenantIdB, id: 'big:0:21:0' }), null);
  });
});
