import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { formatDuration, parseDurationMs, parseTimeMs, DURATION_MS_MAX } from './duration.ts';

describe('parseDurationMs', () => {
  const good: [unknown, number][] = [
    ['250ms', 250],
    ['30s', 30_000],
    ['5m', 300_000],
    ['4h', 14_400_000],
    ['7d', 604_800_000],
    [0, 0],
    [1500, 1500],
    ['0s', 0],
  ];
  for (const [input, want] of good)
    it(`accepts ${JSON.stringify(input)}`, () => assert.equal(parseDurationMs(input), want));
  const bad: unknown[] = [
    '',
    '5',
    '5 m',
    '-5s',
    '1.5s',
    '5w',
    's',
    -1,
    1.5,
    NaN,
    Infinity,
    null,
    {},
    '99999999999999d',
    DURATION_MS_MAX + 1,
    '٣s',
  ];
  for (const input of bad)
    it(`rejects ${String(JSON.stringify(input))}`, () => assert.equal(parseDurationMs(input), null));
  it('formats back exactly', () => {
    for (const ms of [0, 1, 250, 1000, 90_000, 3_600_000, 86_400_000, 1234])
      assert.equal(parseDurationMs(formatDuration(ms)), ms);
    assert.equal(formatDuration(90_000), '90s');
    assert.equal(formatDuration(300_000), '5m');
  });
});

describe('parseTimeMs', () => {
  it('reads RFC 3339 with zones and fractions', () => {
    assert.equal(parseTimeMs('2026-11-22T10:21:55Z'), Date.UTC(2026, 10, 22, 10, 21, 55));
    assert.equal(parseTimeMs('2026-11-22T10:21:55.123Z'), Date.UTC(2026, 10, 22, 10, 21, 55, 123));
    assert.equal(parseTimeMs('2026-11-22T11:21:55+01:00'), Date.UTC(2026, 10, 22, 10, 21, 55));
  });
  it('reads epoch milliseconds', () => assert.equal(parseTimeMs(1_800_000_000_000), 1_800_000_000_000));
  const bad: unknown[] = [
    '2026-02-31T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-11-22',
    '2026-11-22T10:21:55',
    'tomorrow',
    '',
    1.5,
    -1,
    1e300,
    '1999-12-31T23:59:59Z',
    '2026-11-22T25:00:00Z',
    '2026-02-30T00:00:00+02:00',
    null,
    true,
  ];
  for (const input of bad) it(`rejects ${JSON.stringify(input)}`, () => assert.equal(parseTimeMs(input), null));
});
