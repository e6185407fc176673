/** The event `type` through the API, on both stores: create, batch, patch, list filter, idempotency, bad input. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { bearer, TEST_BACKENDS, type TestApp } from '../support/app.ts';
import type { Store } from '../../src/store/store.ts';

for (const [backend, make] of TEST_BACKENDS) {
  describe(`event type (${backend})`, () => {
    let t: TestApp<Store>;
    before(async () => {
      t = await make();
      const put = await req('PUT', '/v1/destinations/orders', { url: 'https://orders.example.com/hook' });
      assert.equal(put.statusCode, 201);
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

    test('is stored and shown on create, get and list; null when not given', async () => {
      const created = await req('POST', '/v1/events', {
        id: 'typed-1',
        destination: 'orders',
        delay: '1h',
        type: 'order.timeout',
      });
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(created.json().type, 'order.timeout');
      assert.equal((await req('GET', '/v1/events/typed-1')).json().type, 'order.timeout');
      const plain = await req('POST', '/v1/events', { id: 'untyped-1', destination: 'orders', delay: '1h' });
      assert.equal(plain.json().type, null);
    });

    test('is part of the request hash: the same id with another type is a conflict', async () => {
      const body = { id: 'typed-idem', destination: 'orders', delay: '1h', type: 'a.b' };
      assert.equal((await req('POST', '/v1/events', body)).statusCode, 201);
      assert.equal((await req('POST', '/v1/events', body)).statusCode, 200);
      assert.equal((await req('POST', '/v1/events', { ...body, type: 'a.c' })).statusCode, 409);
      assert.equal(
        (await req('POST', '/v1/events', { id: 'typed-idem', destination: 'orders', delay: '1h' })).statusCode,
        409,
      );
    });

    test('is accepted per item in a batch; a bad one fails alone, naming the field', async () => {
      const res = await req('POST', '/v1/events/batch', {
        events: [
          { id: 'b-typed', destination: 'orders', delay: '1h', type: 'batch.kind' },
          { id: 'b-bad', destination: 'orders', delay: '1h', type: 'has space' },
        ],
      });
      assert.equal(res.statusCode, 200, res.body);
      const [ok, bad] = res.json().results;
      assert.equal(ok.status, 'created');
      assert.equal(ok.event.type, 'batch.kind');
      assert.equal(bad.status, 'error');
      assert.match(JSON.stringify(bad.error), /type/);
      assert.equal((await req('GET', '/v1/events/b-bad')).statusCode, 404);
    });

    test('refuses a bad type with a 400 naming the field, and writes nothing', async () => {
      for (const type of ['', ' x', 'a b', 'é.x', '.leading', 'x'.repeat(101), 42]) {
        const res = await req('POST', '/v1/events', { id: 'bad-type', destination: 'orders', delay: '1h', type });
        assert.equal(res.statusCode, 400, `${JSON.stringify(type)}: ${res.body}`);
        assert.match(JSON.stringify(res.json().error), /type/);
      }
      assert.equal((await req('GET', '/v1/events/bad-type')).statusCode, 404);
      assert.equal((await req('GET', '/v1/events?type=a%20b')).statusCode, 400);
      assert.equal(
        (await req('POST', '/v1/events', { destination: 'orders', type: 'x'.repeat(100) })).statusCode,
        201,
        '100 characters is the bound',
      );
    });

    test('is changed by PATCH (set, change, null removes), with an updated transition naming it', async () => {
      await req('POST', '/v1/events', { id: 'patch-type', destination: 'orders', delay: '1h' });
      const set = await req('PATCH', '/v1/events/patch-type', { type: 'first.kind' });
      assert.equal(set.statusCode, 200, set.body);
      assert.equal(set.json().type, 'first.kind');
      const cleared = await req('PATCH', '/v1/events/patch-type', { type: null });
      assert.equal(cleared.json().type, null);
      assert.equal((await req('PATCH', '/v1/events/patch-type', { type: 'bad kind' })).statusCode, 400);
      const trace = (await req('GET', '/v1/events/patch-type/transitions')).json().transitions;
      assert.deepEqual(
        trace.slice(1).map((tr: { detail: { fields: string[] } }) => tr.detail.fields),
        [['type'], ['type']],
      );
    });

    test('filters the list by type, newest first, cursor-paged, for the caller tenant only', async () => {
      for (let i = 0; i < 5; i++)
        await req('POST', '/v1/events', {
          id: `lt-${i}`,
          destination: 'orders',
          delay: '1h',
          type: i % 2 ? 'list.odd' : 'list.even',
        });
      await req(
        'POST',
        '/v1/events',
        { id: 'lt-b', destination: { url: 'https://b.example.com/' }, delay: '1h', type: 'list.even' },
        t.tenantKeyB,
      );
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { events: { id: string }[]; nextCursor: string | null } = (
          await req('GET', `/v1/events?type=list.even&limit=2${cursor ? `&cursor=${cursor}` : ''}`)
        ).json();
        ids.push(...page.events.map((e) => e.id));
        cursor = page.nextCursor;
      } while (cursor);
      assert.deepEqual(ids, ['lt-4', 'lt-2', 'lt-0']);
      const odd = (await req('GET', '/v1/events?type=list.odd&state=scheduled'))
        .json()
        .events.map((e: { id: string }) => e.id);
      assert.deepEqual(odd, ['lt-3', 'lt-1']);
    });
  });
}
