/**
 * Slow forecasts cannot starve API writes (PostgreSQL, where they would share a pool): while a
 * tenant keeps many slow forecasts in flight at once (each over FILL_EVENTS scheduled events, a
 * few hundred ms on this machine), and the admin's forecasts over every tenant too, another
 * tenant's single creates answer within a bound. Forecasts run on the store's own small read pool
 * (never more than POSTGRES_READ_POOL_SIZE connections at once), and a tenant's forecasts run one
 * at a time on a node, the next few waiting their turn.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bearer, ADMIN_KEY, makePostgresTestApp, type TestApp } from '../support/app.ts';
import { percentile } from '../support/node.ts';
import { BelfryError } from '../../src/core/errors.ts';
import { createPool } from '../../src/store/postgres/db.ts';
import { PostgresDatabase } from '../../src/store/postgres/database.ts';
import { PostgresEvents } from '../../src/store/postgres/event-store.ts';
import { type PostgresStore, POSTGRES_READ_POOL_SIZE } from '../../src/store/postgres/postgres-store.ts';
import type { Store } from '../../src/store/store.ts';
import { TEST_PG_URL } from '../support/pg.ts';

const FILL_EVENTS = 150_000;
/** Forecast requests kept in flight at once: the tenant's and the admin's. */
const FORECAST_CLIENTS = 8;
const CREATES = 40;
/** Bound on one create's answer while the forecasts run (a shared 2-core machine; alone: ~10 ms). */
const CREATE_MS_MAX = 250;
const HOUR = 3_600_000;

/**
 * Tenant A's `n` scheduled events, due over the next day: copies of its event 'template' (made
 * through the API), written in one statement (through the API it would take minutes).
 */
async function fill(t: TestApp<Store>, n: number): Promise<void> {
  const pool = (t.store as unknown as PostgresStore).pool;
  await pool.query(
    `INSERT INTO events (tenant_id, id, shard, state, version, fire_at, due_at, destination, payload, headers, grp, retry, expire_at,
        tags, attempts, request_hash, created_at, updated_at, queue, type, pull)
      SELECT e.tenant_id, 'fill-' || k, k % 16, 'scheduled', 1, e.fire_at + k * 500, e.due_at + k * 500, e.destination, e.payload, e.headers,
        NULL, e.retry, NULL, e.tags, 0, '', e.created_at, e.created_at, e.queue, e.type, e.pull
      FROM generate_series(1, ${n}) k, (SELECT * FROM events WHERE id = 'template') e`,
  );
  await pool.query('ANALYZE events');
}

/** `n` single creates of tenant B through the API, one after another: their durations. */
async function timedCreates(t: TestApp<Store>, prefix: string, n: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const startMs = performance.now();
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: bearer(t.tenantKeyB),
      payload: { id: `${prefix}-${i}`, destination: 'orders', delay: '2h' },
    });
    ms.push(performance.now() - startMs);
    assert.equal(res.statusCode, 201, res.body);
  }
  return ms;
}

describe('forecasts beside API writes (postgres)', () => {
  let t: TestApp<Store>;
  before(async () => {
    t = await makePostgresTestApp();
    const put = await t.app.inject({
      method: 'PUT',
      url: '/v1/destinations/orders',
      headers: bearer(t.tenantKey),
      payload: { url: 'https://orders.example.com/hook' },
    });
    assert.equal(put.statusCode, 201, put.body);
    const putB = await t.app.inject({
      method: 'PUT',
      url: '/v1/destinations/orders',
      headers: bearer(t.tenantKeyB),
      payload: { url: 'https://orders.example.com/hook' },
    });
    assert.equal(putB.statusCode, 201, putB.body);
    const first = await t.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: bearer(t.tenantKey),
      payload: { id: 'template', destination: 'orders', delay: '1h' },
    });
    assert.equal(first.statusCode, 201, first.body);
    await fill(t, FILL_EVENTS);
  });
  after(() => t?.cleanup());

  it(`single creates answer within ${CREATE_MS_MAX} ms while ${FORECAST_CLIENTS} slow forecasts are kept in flight`, async () => {
    const forecast = (key: string) =>
      t.app.inject({
        method: 'GET',
        url: `/v1/forecast?from=now&to=24h&bucket=1m${key === ADMIN_KEY ? '&by=tenant' : '&by=destination'}`,
        headers: bearer(key),
      });
    // One alone, to know it is slow (and to warm the plan).
    const aloneMs = performance.now();
    const alone = await forecast(t.tenantKey);
    assert.equal(alone.statusCode, 200, alone.body);
    assert.ok(alone.json().total >= FILL_EVENTS - 1_000, `the forecast counts the fill: ${alone.json().total}`);
    const oneForecastMs = performance.now() - aloneMs;

    let stop = false;
    const answers: Record<number, number> = {};
    const forecasts: number[] = [];
    const clients = Array.from({ length: FORECAST_CLIENTS }, async (_, i) => {
      while (!stop) {
        const startMs = performance.now();
        const res = await forecast(i % 4 === 3 ? ADMIN_KEY : t.tenantKey);
        answers[res.statusCode] = (answers[res.statusCode] ?? 0) + 1;
        if (res.statusCode === 200) forecasts.push(performance.now() - startMs);
        else {
          assert.equal(res.statusCode, 429, res.body);
          assert.ok(Number(res.headers['retry-after']) >= 1, 'a 429 says when to come back');
          await new Promise((r) => setTimeout(r, Number(res.headers['retry-after']) * 1_000));
        }
      }
    });
    let creates: number[] = [];
    try {
      // The forecasts under way first: wait for one to answer (a condition, not a sleep).
      while (forecasts.length === 0) await new Promise((r) => setTimeout(r, 20));
      creates = await timedCreates(t, 'c', CREATES);
    } finally {
      stop = true;
      await Promise.all(clients);
    }
    const createMax = Math.max(...creates);
    console.log(
      `forecast isolation: one forecast alone ${Math.round(oneForecastMs)} ms; under ${FORECAST_CLIENTS} clients: ${forecasts.length} answered (p50 ${Math.round(percentile(forecasts, 50))} ms), answers ${JSON.stringify(answers)}; ` +
        `${CREATES} creates p50 ${percentile(creates, 50).toFixed(1)} ms, p99 ${percentile(creates, 99).toFixed(1)} ms, max ${createMax.toFixed(1)} ms`,
    );
    assert.ok(createMax <= CREATE_MS_MAX, `a create took ${createMax.toFixed(1)} ms`);
  });

  it(`holds forecasts to ${POSTGRES_READ_POOL_SIZE} connections however many are asked for at once; creates go on beside them`, async () => {
    const store = t.store as unknown as PostgresStore;
    const now = t.clock.now();
    let stop = false;
    let done = 0;
    let readConnectionsMax = 0;
    // Straight to the store, past the API's bound per tenant: only the pool bounds these.
    const loops = Array.from({ length: 3 * FORECAST_CLIENTS }, async () => {
      while (!stop) {
        const rows = await store.eventForecast({
          tenantId: t.tenantId,
          fromMs: now,
          toMs: now + 24 * HOUR,
          bucketMs: 60_000,
          by: 'destination',
        });
        assert.ok(rows.length > 0);
        done += 1;
        readConnectionsMax = Math.max(readConnectionsMax, store.readPool.totalCount);
      }
    });
    let creates: number[] = [];
    try {
      while (store.readPool.waitingCount === 0) await new Promise((r) => setTimeout(r, 5));
      creates = await timedCreates(t, 'p', CREATES);
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    const createMax = Math.max(...creates);
    console.log(
      `read pool: ${3 * FORECAST_CLIENTS} forecast loops, ${done} forecasts, at most ${readConnectionsMax} read connections; ${CREATES} creates p50 ${percentile(creates, 50).toFixed(1)} ms, max ${createMax.toFixed(1)} ms`,
    );
    assert.ok(readConnectionsMax <= POSTGRES_READ_POOL_SIZE, `${readConnectionsMax} read connections`);
    assert.ok(createMax <= CREATE_MS_MAX, `a create took ${createMax.toFixed(1)} ms`);
  });

  it("answers a forecast past the read pool's statement bound with 503 and a reason, not a 500", async () => {
    const own = t.store as unknown as PostgresStore;
    // The same schema, with a read pool whose bound every forecast over the fill passes.
    const readPool = createPool({
      url: TEST_PG_URL,
      schema: own.schema,
      size: 1,
      onError: () => {},
      statementTimeoutMs: 1,
    });
    // The event part (which runs forecasts) on those pools.
    const store = new PostgresEvents(new PostgresDatabase(own.pool, own.schema, own.claimPool, readPool));
    try {
      const now = t.clock.now();
      await assert.rejects(
        store.eventForecast({
          tenantId: t.tenantId,
          fromMs: now,
          toMs: now + 24 * HOUR,
          bucketMs: 60_000,
          by: 'destination',
        }),
        (err: unknown) =>
          err instanceof BelfryError &&
          err.status === 503 &&
          /shorter window/.test(err.message) &&
          err.headers['retry-after'] !== undefined,
      );
    } finally {
      await readPool.end();
    }
  });
});
