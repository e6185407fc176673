/** SourceIngest over a real SQLite store: derived ids, batches, a message accepted or refused whole, the tenant's limits, idempotent redelivery, conflicts. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SystemClock } from '../core/clock.ts';
import type { SourceRecord } from '../store/sources.ts';
import { bearer, makeTestApp, type TestApp } from '../../test/support/app.ts';
import { SourceIngest } from './source-ingest.ts';
import { TenantQuotas } from './tenant-quotas.ts';

let t: TestApp;
let ingest: SourceIngest;
let source: SourceRecord;
let created = 0;

before(async () => {
  t = await makeTestApp({ limits: { batchEventsMax: 3, payloadBytesMax: 100 } });
  const res = await t.app.inject({ method: 'PUT', url: '/v1/destinations/hooks', headers: bearer(t.tenantKey), payload: { url: 'http://127.0.0.1:9/hook' } });
  assert.equal(res.statusCode, 201);
  const clock = new SystemClock();
  ingest = new SourceIngest({
    store: t.store, clock, writer: t.deps.writer, quotas: new TenantQuotas(t.store, clock, t.deps.limits, t.deps.counts),
    shardCount: 16, addressPolicy: t.deps.addressPolicy, messageBytesMax: 1_000, onEventsCreated: (events) => (created += events.length),
  });
  const put = await t.store.sourcePut({
    tenantId: t.tenantId, name: 'src', perTenantMax: 10, now: 0,
    spec: { kind: 'kafka', brokers: ['127.0.0.1:9092'], topic: 't', groupId: 'g', deadLetterTopic: null, start: 'earliest', sasl: null, ssl: false },
  });
  assert.equal(put.kind, 'created');
  source = put.kind === 'created' ? put.source : (undefined as never);
});
after(() => t.cleanup());

const msg = (offset: number, value: unknown, partition = 0) => ({ partition, offset: String(offset), value: Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)) });

describe('SourceIngest', () => {
  it('stores one event or a batch per message, with derived ids where none is given, and again creates nothing', async () => {
    const messages = [
      msg(7, { destination: 'hooks', payload: { a: 1 } }),
      msg(8, { events: [{ destination: 'hooks', payload: { b: 1 } }, { id: 'mine', destination: 'hooks', delay: '1h', payload: { b: 2 } }] }, 1),
    ];
    const before = created;
    assert.deepEqual(await ingest.ingest(source, messages), [{ kind: 'accepted', created: 1 }, { kind: 'accepted', created: 2 }]);
    assert.equal(created - before, 3);
    for (const id of ['src:0:7:0', 'src:1:8:0', 'mine']) assert.ok(await t.store.eventGet({ tenantId: t.tenantId, id }), id);
    assert.deepEqual(await ingest.ingest(source, messages), [{ kind: 'accepted', created: 0 }, { kind: 'accepted', created: 0 }], 'read again: nothing new');
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
    const out = await ingest.ingest(source, [msg(200, { id: 'mine', destination: 'hooks', payload: { other: true } }), msg(201, { destination: 'hooks' })]);
    assert.equal(out[0].kind, 'rejected');
    assert.match(out[0].kind === 'rejected' ? out[0].reason : '', /conflict: id "mine"/);
    assert.deepEqual(out[1], { kind: 'accepted', created: 1 });
  });
});
