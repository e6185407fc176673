import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CronSyntaxError, nextOccurrence, nextOccurrences, parseCron, type ScheduleTiming } from './occurrences.ts';
import { instantOf, isTimeZone, offsetMs, wallOf } from './zone.ts';

const iso = (ts: number[]) => ts.map((t) => new Date(t).toISOString());
const cron = (expr: string, zone = 'UTC', startAt = 0, endAt: number | null = null): ScheduleTiming => ({
  kind: 'cron',
  cron: expr,
  zone,
  startAt,
  endAt,
});

test('parseCron refuses what is not plain cron, naming the problem', () => {
  for (const bad of [
    '* * *',
    '1 2 3 4 5 6 7',
    '61 * * * *',
    '0 0 31 2 *',
    'foo * * * *',
    '0 0 L * *',
    '0 0 * * 5#2',
    '0 0 ? * *',
    'H * * * *',
    '0 0 1W * *',
  ]) {
    assert.throws(() => parseCron(bad), CronSyntaxError, bad);
  }
  assert.deepEqual([...parseCron('0 9 * * MON-FRI').daysOfWeek].sort(), [1, 2, 3, 4, 5]);
  assert.ok(parseCron('0 0 * * 7').daysOfWeek.has(0), '7 is Sunday too');
});

test('day of month and day of week: either when both are restricted, both otherwise', () => {
  // 2026-11-01 is a Sunday. "1st of the month or any Friday".
  assert.deepEqual(iso(nextOccurrences(cron('0 0 1 * FRI'), Date.parse('2026-10-29T00:00:00Z'), 3)), [
    '2026-10-30T00:00:00.000Z',
    '2026-11-01T00:00:00.000Z',
    '2026-11-06T00:00:00.000Z',
  ]);
  // "every other day that is a Friday": */2 starts with *, so both must match.
  assert.deepEqual(iso(nextOccurrences(cron('0 0 */2 * FRI'), Date.parse('2026-10-29T00:00:00Z'), 2)), [
    '2026-11-13T00:00:00.000Z',
    '2026-11-27T00:00:00.000Z',
  ]);
});

test('six fields: seconds', () => {
  assert.deepEqual(iso(nextOccurrences(cron('*/20 * * * * *'), Date.parse('2026-11-23T10:00:00.500Z'), 3)), [
    '2026-11-23T10:00:20.000Z',
    '2026-11-23T10:00:40.000Z',
    '2026-11-23T10:01:00.000Z',
  ]);
});

test('a cron that matches only on 29 February finds it; one that cannot match is refused', () => {
  assert.equal(
    new Date(nextOccurrence(cron('0 12 29 2 *'), Date.parse('2026-11-23T00:00:00Z'))!).toISOString(),
    '2028-02-29T12:00:00.000Z',
  );
  assert.throws(() => parseCron('0 0 30 2 *'), CronSyntaxError);
});

test('every is elapsed time from startAt, through DST, and honours endAt', () => {
  const start = Date.parse('2026-03-29T00:30:00Z');
  const timing: ScheduleTiming = { kind: 'every', everyMs: 30 * 60_000, startAt: start, endAt: start + 2 * 3_600_000 };
  assert.deepEqual(iso(nextOccurrences(timing, 0, 10)), [
    '2026-03-29T00:30:00.000Z',
    '2026-03-29T01:00:00.000Z',
    '2026-03-29T01:30:00.000Z',
    '2026-03-29T02:00:00.000Z',
  ]);
  assert.equal(nextOccurrence(timing, start + 10), start + 30 * 60_000);
});

test('cron honours startAt (inclusive) and endAt (exclusive)', () => {
  const t = cron('0 * * * *', 'UTC', Date.parse('2026-11-23T10:00:00Z'), Date.parse('2026-11-23T12:00:00Z'));
  assert.deepEqual(iso(nextOccurrences(t, 0, 5)), ['2026-11-23T10:00:00.000Z', '2026-11-23T11:00:00.000Z']);
});

test('zones: names only; offsets, wall times and instants', () => {
  assert.ok(isTimeZone('Europe/Paris'));
  assert.ok(isTimeZone('UTC'));
  assert.ok(isTimeZone('America/Argentina/Buenos_Aires'));
  for (const bad of ['Mars/Olympus', '+05:00', 'Europe/', '', 'x'.repeat(100)])
    assert.equal(isTimeZone(bad), false, bad);
  assert.equal(offsetMs('Asia/Kolkata', Date.parse('2026-06-01T00:00:00Z')), 5.5 * 3_600_000);
  assert.equal(
    wallOf('Asia/Kathmandu', Date.parse('2026-06-01T00:00:00.250Z')),
    Date.parse('2026-06-01T05:45:00.250Z'),
  );
  // Paris 2026-03-29 02:30 does not exist: the first instant after it is the jump at 01:00Z.
  assert.equal(instantOf('Europe/Paris', Date.parse('2026-03-29T02:30:00Z')), Date.parse('2026-03-29T01:00:00Z'));
  // Paris 2026-10-25 02:30 exists twice: the first is CEST.
  assert.equal(instantOf('Europe/Paris', Date.parse('2026-10-25T02:30:00Z')), Date.parse('2026-10-25T00:30:00Z'));
});
