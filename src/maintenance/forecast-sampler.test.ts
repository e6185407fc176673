import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { Registry } from 'prom-client';
import { SimClock } from '../core/clock.ts';
import { shardOf } from '../core/shard.ts';
import { ForecastSampler } from './forecast-sampler.ts';
import { openSqliteStore, type SqliteStore } from '../store/sqlite/sqlite-store.ts';
import type { NewEvent } from '../store/store.ts';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 30);
const MIN = 60_000;

function ev(tenantId: string, id: string, fireAt: number): NewEvent {
  return {
    tenantId,
    id,
    shard: shardOf(tenantId, id, 16),
    fireAt,
    destination: { name: 'd' },
    payload: '{}',
    headers: {},
    group: null,
    retry: null,
    expireAt: null,
    tags: {},
    requestHash: '',
  };
}

describe('ForecastSampler', () => {
  let dir: string;
  let store: SqliteStore;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'belfry-forecast-'));
    store = await openSqliteStore({ dataDir: dir });
    for (const t of ['ta', 'tb']) await store.tenantCreate({ id: t, name: t, settings: {}, createdAt: T0 });
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('publishes the due load of the next minutes over every tenant, and the spikes of the next hour', async () => {
    const start = Math.floor(T0 / MIN) * MIN;
    const events: NewEvent[] = [
      ev('ta', 'now', start + 1_000),
      ev('tb', 'm3', start + 3 * MIN),
      ev('ta', 'm30', start + 30 * MIN),
      ev('ta', 'late', start + 61 * MIN),
    ];
    for (let i = 0; i < 50; i++) events.push(ev('tb', `burst-${i}`, start + 10 * MIN + i));
    await store.eventInsertMany({ events, now: T0 });
    const registry = new Registry();
    const sampler = new ForecastSampler({
      store,
      clock: new SimClock(T0),
      logger: pino({ level: 'silent' }),
      registry,
    });
    const sample = await sampler.runOnce();
    assert.equal(sample.perMinute.length, 60);
    assert.equal(sample.spikes, 1);
    const text = await registry.metrics();
    for (const [within, n] of [
      ['1m', 1],
      ['5m', 2],
      ['15m', 52],
      ['60m', 53],
    ] as const) {
      assert.match(text, new RegExp(`belfry_forecast_due_events\\{within="${within}"\\} ${n}\\n`), text);
    }
    assert.match(text, /belfry_forecast_spikes 1\n/);
    assert.equal(sampler.nextWaitMs(), 15_000);
  });
});
