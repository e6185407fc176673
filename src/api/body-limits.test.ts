import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError, DEFAULT_CONFIG, resolveConfig } from '../node/config.ts';
import {
  BATCH_BODY_BYTES_CAP,
  bodyBytesMaxOf,
  BodyBudget,
  bodyKindOf,
  BODY_BYTES_IN_FLIGHT_MAX_DEFAULT,
} from './body-limits.ts';
import { DEFAULT_TENANT_LIMITS, PAYLOAD_BYTES_CAP } from '../core/tenant-limits.ts';

const MiB = 1024 * 1024;
const NODE_MAX = 64 * MiB;

test('route limits: 1 MiB, one event, a batch sized from batchEventsMax and payloadBytesMax', () => {
  const d = DEFAULT_TENANT_LIMITS;
  assert.equal(bodyBytesMaxOf('small', d, NODE_MAX), MiB);
  assert.equal(bodyBytesMaxOf('event', d, NODE_MAX), MiB, 'a 256 KiB payload and its fields fit in 1 MiB');
  assert.equal(bodyBytesMaxOf('batch', d, NODE_MAX), 1_000 * 4096 + 256 * 1024);
  // A tenant allowed larger payloads or batches gets room for them, within the caps.
  assert.equal(bodyBytesMaxOf('event', { ...d, payloadBytesMax: 4 * MiB }, NODE_MAX), 4 * MiB + 256 * 1024);
  assert.equal(bodyBytesMaxOf('batch', { ...d, batchEventsMax: 10 }, NODE_MAX), MiB, 'never below 1 MiB');
  assert.equal(
    bodyBytesMaxOf('batch', { ...d, batchEventsMax: 10_000, payloadBytesMax: PAYLOAD_BYTES_CAP }, NODE_MAX),
    BATCH_BODY_BYTES_CAP,
  );
  // The node's bound is above every route's.
  for (const kind of ['small', 'event', 'batch'] as const) assert.equal(bodyBytesMaxOf(kind, d, 64 * 1024), 64 * 1024);
});

test('route kinds by method and path pattern', () => {
  assert.equal(bodyKindOf('POST', '/v1/events/batch'), 'batch');
  assert.equal(bodyKindOf('POST', '/v1/events'), 'event');
  assert.equal(bodyKindOf('PATCH', '/v1/events/:id'), 'event');
  assert.equal(bodyKindOf('POST', '/v1/schedules'), 'event');
  assert.equal(bodyKindOf('PUT', '/v1/destinations/:name'), 'small');
  assert.equal(bodyKindOf('POST', undefined), 'small', 'no route (404)');
});

test('the budget counts bodies in flight, refuses past it unless the body is alone, and releases', () => {
  const budget = new BodyBudget(100);
  assert.ok(budget.tryReserve(60));
  assert.ok(!budget.tryReserve(50), 'past the budget with another body in flight');
  assert.equal(budget.bytesInFlight, 60, 'a refusal counts nothing');
  assert.ok(budget.tryReserve(40));
  budget.release(60);
  budget.release(40);
  assert.equal(budget.bytesInFlight, 0);
  assert.ok(budget.tryReserve(250), 'a body alone is let in whatever its size');
  assert.ok(budget.tryReserve(10, 250), 'and goes on (chunked) while it is alone');
  assert.ok(!budget.tryReserve(1), 'while others wait');
});

test('bodyBytesInFlightMax: default, flag, env and file key; at least 1 MiB', () => {
  assert.equal(DEFAULT_CONFIG.bodyBytesInFlightMax, BODY_BYTES_IN_FLIGHT_MAX_DEFAULT);
  assert.equal(resolveConfig([], {}).bodyBytesInFlightMax, 32 * MiB);
  assert.equal(resolveConfig(['--body-bytes-in-flight-max', String(8 * MiB)], {}).bodyBytesInFlightMax, 8 * MiB);
  assert.equal(resolveConfig([], { BELFRY_BODY_BYTES_IN_FLIGHT_MAX: String(2 * MiB) }).bodyBytesInFlightMax, 2 * MiB);
  const dir = mkdtempSync(join(tmpdir(), 'belfry-config-'));
  try {
    const file = join(dir, 'belfry.json');
    writeFileSync(file, JSON.stringify({ bodyBytesInFlightMax: 4 * MiB }));
    assert.equal(resolveConfig(['--config', file], {}).bodyBytesInFlightMax, 4 * MiB);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  for (const bad of ['1000', 'lots', '-1', '1.5e9']) {
    assert.throws(
      () => resolveConfig([], { BELFRY_BODY_BYTES_IN_FLIGHT_MAX: bad }),
      (err: unknown) => err instanceof ConfigError && /bodyBytesInFlightMax/.test(err.message),
      bad,
    );
  }
});
