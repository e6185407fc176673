import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DeliveryStats, RECENT_DELIVERIES_MAX } from './delivery-stats.ts';

test('an empty window has no rate and no percentile', () => {
  assert.deepEqual(new DeliveryStats().view(), { deliveries: 0, successRate: null, p99DurationMs: null });
});

test('success rate and p99 over the attempts recorded', () => {
  const s = new DeliveryStats();
  for (let i = 1; i <= 100; i++)
    s.add(
      i % 4 === 0 ? { kind: 'retry', reason: '500', durationMs: i } : { kind: 'delivered', status: 200, durationMs: i },
    );
  assert.deepEqual(s.view(), { deliveries: 100, successRate: 0.75, p99DurationMs: 99 });
});

test('the window keeps only the last RECENT_DELIVERIES_MAX attempts', () => {
  const s = new DeliveryStats();
  for (let i = 0; i < RECENT_DELIVERIES_MAX; i++) s.add({ kind: 'retry', reason: 'x', durationMs: 5_000 });
  for (let i = 0; i < RECENT_DELIVERIES_MAX; i++) s.add({ kind: 'delivered', durationMs: 10 });
  assert.deepEqual(s.view(), { deliveries: RECENT_DELIVERIES_MAX, successRate: 1, p99DurationMs: 10 });
});
