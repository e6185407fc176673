/** GET /v1/forecast on both stores: buckets, splits, spikes, the admin's view, bounds and bad input. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN_KEY, bearer, TEST_BACKENDS, type TestApp } from '../support/app.ts';
import { FORECASTS_IN_FLIGHT_PER_TENANT, FORECASTS_WAITING_PER_TENANT_MAX } from '../../src/api/routes/forecast.ts';
import type { Store } from '../../src/store/store.ts';
import { waitUntil } from '../support/node.ts';

const MIN = 60_000;

for (const [backend, make] of TEST_BACKENDS) {
  describe(`GET /v1/forecast (${backend})`, () => {
    let t: TestApp<Store>;
    let now: number;
    before(async () => {
      t = await make();
      now = t.clock.now(); // 12:00:00 exactly
      for (const name of ['orders', 'billing']) {
        const put = await t.app.inject({
          method: 'PUT',
          url: `/v1/destinations/${name}`,
          headers: bearer(t.tenantKey),
          payload: { url: `https://${name}.example.com/hook` },
        });
        assert.equal(put.statusCode, 201);
      }
      // Tenant A: one event a minute to orders for 20 minutes, plus a burst of 40 to billing in minute 10.
      const events: { destination: string; fireAt: number }[] = [];
      for (let m = 0; m < 20; m++) events.push({ destination: 'orders', fireAt: now + m * MIN + 1_000 });
      for (let i = 0; i < 40; i++) events.push({ destination: 'billing', fireAt: now + 10 * MIN + 2_000 + i });
      for (let i = 0; i < events.length; i += 30) {
        const res = await t.app.inject({
          method: 'POST',
          url: '/v1/events/batch',
          headers: bearer(t.tenantKey),
          payload: { events: events.slice(i, i + 30) },
        });
        assert.equal(res.statusCode, 200, res.body);
      }
      // Tenant B: 3 in minute 2 (to an inline URL), 1 canceled.
      for (let i = 0; i < 4; i++) {
        const res = await t.app.inject({
          method: 'POST',
          url: '/v1/events',
          headers: bearer(t.tenantKeyB),
          payload: { id: `b${i}`, destination: { url: 'https://b.example.com/x' }, fireAt: now + 2 * MIN + i },
        });
        assert.equal(res.statusCode, 201, res.body);
      }
      assert.equal(
        (await t.app.inject({ method: 'DELETE', url: '/v1/events/b3', headers: bearer(t.tenantKeyB) })).statusCode,
        200,
      );
    });
    after(() => t.cleanup());

    function get(query: string, key = t.tenantKey) {
      return t.app.inject({ method: 'GET', url: `/v1/forecast${query}`, headers: bearer(key) });
    }

    test('counts the tenant own scheduled events per minute, flags the burst as a spike', async () => {
      const res = await get('?from=now&to=30m&bucket=1m');
      assert.equal(res.statusCode, 200, res.body);
      const f = res.json();
      assert.equal(f.buckets.length, 30);
      assert.equal(f.total, 60);
      assert.equal(f.bucket, '1m');
      assert.equal(f.by, null);
      assert.equal(f.buckets[0].at, new Date(now).toISOString());
      assert.deepEqual(
        f.buckets.slice(0, 12).map((b: { count: number }) => b.count),
        [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 41, 1],
      );
      assert.deepEqual(f.spikes, [new Date(now + 10 * MIN).toISOString()]);
      assert.equal(f.buckets[10].spike, true);
      assert.equal(f.buckets[11].spike, false);
      assert.equal(f.buckets[0].by, undefined);
    });

    test('splits by destination; an hour bucket sums the window', async () => {
      const byDest = (await get('?to=30m&by=destination')).json();
      assert.deepEqual(byDest.buckets[10].by, { orders: 1, billing: 40 });
      assert.deepEqual(byDest.buckets[3].by, { orders: 1 });
      assert.deepEqual(byDest.buckets[25].by, {});
      const hourly = (await get('?to=2h&bucket=1h')).json();
      assert.deepEqual(
        hourly.buckets.map((b: { count: number }) => b.count),
        [60, 0],
      );
      const later = (await get(`?from=${new Date(now + 15 * MIN).toISOString()}&to=1h`)).json();
      assert.equal(later.total, 5);
    });

    test('the admin key sees every tenant, split by tenant', async () => {
      const res = await get('?to=30m&by=tenant', ADMIN_KEY);
      assert.equal(res.statusCode, 200, res.body);
      const f = res.json();
      assert.equal(f.total, 63);
      assert.deepEqual(f.buckets[2].by, { [t.tenantId]: 1, [t.tenantIdB]: 3 });
      assert.equal((await get('?to=30m')).json().total, 60, 'a tenant sees its own only');
      assert.equal((await get('?to=30m', t.tenantKeyB)).json().total, 3);
    });

    test('refuses too many buckets and bad input with a 400 naming the field; 401 without a key', async () => {
      const cases: [string, string][] = [
        ['?to=25h&bucket=1m', 'bucket'],
        ['?to=7d&bucket=1s', 'bucket'],
        ['?bucket=0s', 'bucket'],
        ['?bucket=2d', 'bucket'],
        ['?bucket=soon', 'bucket'],
        ['?from=yesterday', 'from'],
        ['?to=never', 'to'],
        [`?from=${new Date(now).toISOString()}&to=${new Date(now - MIN).toISOString()}`, 'to'],
        ['?by=tenant', 'by'],
        ['?by=shard', 'by'],
      ];
      for (const [query, field] of cases) {
        const res = await get(query);
        assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
        assert.match(JSON.stringify(res.json().error), new RegExp(field), query);
      }
      assert.equal((await get('?by=destination', ADMIN_KEY)).statusCode, 400);
      assert.equal((await get('?to=24h&bucket=1m')).statusCode, 200, '1440 buckets is the bound');
      // docs/bulk-and-forecast.md's own example, asked at a moment inside a minute (as a real clock always is).
      const unaligned = await get(`?from=${new Date(now + 30_000).toISOString()}&to=24h&bucket=1m&by=destination`);
      assert.equal(unaligned.statusCode, 200, unaligned.body);
      assert.equal(unaligned.json().buckets.length, 1441);
      assert.equal((await t.app.inject({ method: 'GET', url: '/v1/forecast' })).statusCode, 401);
    });

    test(`runs a tenant's forecasts ${FORECASTS_IN_FLIGHT_PER_TENANT} at a time, lines up ${FORECASTS_WAITING_PER_TENANT_MAX} more, answers 429 past that; another tenant's goes ahead`, async () => {
      // The store's forecast of tenant A held until released: a forecast slow for as long as the test says.
      const real = t.deps.store;
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let atStore = 0;
      t.deps.store = Object.create(real, {
        eventForecast: {
          value: async (p: Parameters<Store['eventForecast']>[0]) => {
            if (p.tenantId === t.tenantId) {
              atStore += 1;
              await held;
            }
            return real.eventForecast(p);
          },
        },
      });
      try {
        const lined = Array.from({ length: FORECASTS_IN_FLIGHT_PER_TENANT + FORECASTS_WAITING_PER_TENANT_MAX }, () =>
          Promise.resolve(get('?to=30m')),
        );
        await waitUntil('the first forecast at the store', () => atStore === FORECASTS_IN_FLIGHT_PER_TENANT, 5_000, 5);
        const over = await get('?to=30m');
        assert.equal(over.statusCode, 429, over.body);
        assert.equal(over.headers['retry-after'], '1');
        assert.equal(over.json().error.code, 'rate_limited');
        const other = await get('?to=30m', t.tenantKeyB);
        assert.equal(other.statusCode, 200, 'tenant B is not behind A');
        assert.equal((await get('?to=30m&by=tenant', ADMIN_KEY)).statusCode, 200, 'nor is the admin');
        assert.equal(atStore, FORECASTS_IN_FLIGHT_PER_TENANT, "A's others wait their turn before the store");
        release();
        const answers = await Promise.all(lined);
        assert.deepEqual(
          answers.map((r) => r.statusCode),
          lined.map(() => 200),
        );
        assert.equal(atStore, lined.length);
        assert.equal((await get('?to=30m')).statusCode, 200, 'room again');
      } finally {
        release();
        t.deps.store = real;
      }
    });
  });
}
