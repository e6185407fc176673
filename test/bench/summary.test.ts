/** The bench summary's best-peer choice and Belfry's ratios to it (bench/lib/summary.ts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Metric, ScenarioResult } from '../../bench/lib/report.ts';
import { bestPeer, formatRatio, ratioTo, summaryFigures, summaryLines } from '../../bench/lib/summary.ts';

function result(scenario: string, system: string, metrics: Record<string, number>): ScenarioResult {
  const list: Metric[] = Object.entries(metrics).map(([name, value]) => ({ name, value, unit: '' }));
  return { label: `${scenario} · ${system}`, scenario, system, options: { n: 5000 }, metrics: list, details: {} };
}

test('bestPeer: highest rate or lowest latency among complete peers; an incomplete better one is passed over and named', () => {
  const peers = [
    { system: 'bullmq', value: 9_000, incomplete: '12 undelivered' },
    { system: 'pg-boss', value: 3_000, incomplete: null },
    { system: 'graphile-worker', value: 5_000, incomplete: null },
  ];
  const high = bestPeer(peers, 'higher');
  assert.equal(high.best?.system, 'graphile-worker');
  assert.deepEqual(
    high.passedOver.map((p) => p.system),
    ['bullmq'],
  );
  const low = bestPeer(peers, 'lower');
  assert.equal(low.best?.system, 'pg-boss');
  assert.deepEqual(low.passedOver, [], 'an incomplete peer that is worse anyway is not worth a note');
  const none = bestPeer(
    [
      { system: 'bullmq', value: 1, incomplete: '1 undelivered' },
      { system: 'pg-boss', value: NaN, incomplete: null },
    ],
    'higher',
  );
  assert.equal(none.best, null);
  assert.deepEqual(
    none.passedOver.map((p) => p.system),
    ['bullmq'],
  );
});

test('ratioTo and formatRatio', () => {
  assert.equal(ratioTo(11_813, 8_319), 11_813 / 8_319);
  assert.ok(Number.isNaN(ratioTo(5, 0)));
  assert.ok(Number.isNaN(ratioTo(NaN, 3)));
  assert.equal(formatRatio(1.4199), '1.42×');
  assert.equal(formatRatio(12.34), '12.3×');
  assert.equal(formatRatio(140.4), '140×');
  assert.equal(formatRatio(0.0412), '0.041×');
  assert.equal(formatRatio(NaN), '');
});

test('summaryFigures: ratios per Belfry column against the best complete peer, none for counts or without peers', () => {
  const results = [
    result('fire', 'belfry-sqlite', {
      'deliveries/s': 12_000,
      'due → last delivery': 500,
      undelivered: 0,
      'CPU µs per event': 40,
    }),
    result('fire', 'belfry-postgres', {
      'deliveries/s': 6_000,
      'due → last delivery': 1_000,
      undelivered: 0,
      'CPU µs per event': 120,
    }),
    result('fire', 'bullmq', {
      'deliveries/s': 20_000,
      'due → last delivery': 250,
      undelivered: 7,
      'CPU µs per event': 30,
    }),
    result('fire', 'pg-boss', {
      'deliveries/s': 8_000,
      'due → last delivery': 2_000,
      undelivered: 0,
      'CPU µs per event': 200,
    }),
    result('burst', 'belfry-sqlite', { 'deliveries/s': 9_000 }),
  ];
  const figures = summaryFigures(results);
  const rate = figures.find((f) => f.scenario === 'fire' && f.metric === 'deliveries/s')!;
  assert.deepEqual(rate.bestPeer, { system: 'pg-boss', value: 8_000 });
  assert.deepEqual(rate.ratioToBestPeer, { 'belfry-sqlite': 1.5, 'belfry-postgres': 0.75 });
  assert.deepEqual(rate.notCountedAsBest, [{ system: 'bullmq', value: 20_000, reason: '7 undelivered' }]);
  const last = figures.find((f) => f.metric === 'due → last delivery')!;
  assert.equal(last.unit, 's');
  assert.deepEqual(last.values, { 'belfry-sqlite': 0.5, 'belfry-postgres': 1, bullmq: 0.25, 'pg-boss': 2 });
  assert.deepEqual(last.ratioToBestPeer, { 'belfry-sqlite': 0.25, 'belfry-postgres': 0.5 });
  const cpu = figures.find((f) => f.scenario === 'fire' && f.metric === 'CPU µs per event')!;
  assert.equal(cpu.bestPeer?.system, 'pg-boss');
  assert.equal(cpu.ratioToBestPeer['belfry-sqlite'], 0.2);
  const undelivered = figures.find((f) => f.metric === 'undelivered')!;
  assert.equal(undelivered.bestPeer, null);
  assert.deepEqual(undelivered.ratioToBestPeer, {});
  const burst = figures.find((f) => f.scenario === 'burst')!;
  assert.deepEqual(burst.ratioToBestPeer, {});

  const lines = summaryLines(results).join('\n');
  assert.match(lines, /12,000 \(1\.50× best peer\)/);
  assert.match(lines, /8,000 \(best peer\)/);
  assert.match(lines, /20,000 ‡/);
  assert.match(lines, /‡ fire · bullmq: 7 undelivered; not counted as best peer\./);
});

test('summaryLines: a limit share and the ratio share one parenthesis', () => {
  const lines = summaryLines([
    result('limits', 'machine', { 'loopback HTTP POSTs/s': 24_000 }),
    result('fire', 'belfry-sqlite', { 'deliveries/s': 12_000, undelivered: 0 }),
    result('fire', 'graphile-worker', { 'deliveries/s': 6_000, undelivered: 0 }),
  ]).join('\n');
  assert.match(lines, /\| 12,000 \(50%; 2\.00× best peer\) \|/);
  assert.match(lines, /\| 6,000 \(25%; best peer\) \|/);
});

test('summaryLines: single-event ingest is shown as a share of the do-nothing JSON API of the same run', () => {
  const lines = summaryLines([
    result('limits', 'machine', { 'loopback HTTP POSTs/s': 40_000, 'do-nothing JSON API, single creates/s': 32_000 }),
    result('ingest', 'belfry-sqlite', { 'single requests/s': 8_000 }),
    result('ingest', 'bullmq', { 'single requests/s': 28_800 }),
  ]).join('\n');
  assert.match(lines, /\| 8,000 \(25%; 0\.28× best peer\) \|/);
  assert.match(lines, /\| 28,800 \(90%; best peer\) \|/);
  assert.match(lines, /\| do-nothing JSON API, single creates \| 32,000 \|/);
});

test("summaryFigures: Belfry's return=minimal batch figure is compared with the peers' own bulk figure, and left out without Belfry", () => {
  const results = [
    result('ingest', 'belfry-sqlite', { 'batch events/s': 60_000, 'batch events/s, Prefer: return=minimal': 72_000 }),
    result('ingest', 'pg-boss', { 'batch events/s': 80_000 }),
    result('ingest', 'graphile-worker', { 'batch events/s': 90_000 }),
  ];
  const minimal = summaryFigures(results).find((f) => f.metric === 'batch events/s, Prefer: return=minimal')!;
  assert.deepEqual(minimal.values, { 'belfry-sqlite': 72_000, 'pg-boss': 80_000, 'graphile-worker': 90_000 });
  assert.deepEqual(minimal.bestPeer, { system: 'graphile-worker', value: 90_000 });
  assert.equal(minimal.ratioToBestPeer['belfry-sqlite'], 0.8);
  assert.equal(
    summaryFigures(results.slice(1)).find((f) => f.metric === 'batch events/s, Prefer: return=minimal'),
    undefined,
  );
});
