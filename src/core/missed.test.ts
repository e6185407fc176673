import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countOccurrences, lastOccurrences, occurrenceFires, type MissedRule } from './missed.ts';
import { nextOccurrence, type ScheduleTiming } from './occurrences.ts';

const T0 = Date.UTC(2026, 0, 5, 10, 0, 0);
const H = 3_600_000;

/** The occurrences in [from, to), walked one by one. */
function walk(timing: ScheduleTiming, from: number, to: number): number[] {
  const out: number[] = [];
  for (let t = nextOccurrence(timing, from - 1); t !== null && t < to; t = nextOccurrence(timing, t)) out.push(t);
  return out;
}

/** Mulberry32, seeded. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CRONS = [
  '*/5 * * * * *',
  '0 * * * *',
  '30 9 * * MON-FRI',
  '*/15 2 * * *',
  '0 0 1 * FRI',
  '7,19 */3 * * *',
  '0 12 * 2 *',
  '* * * * *',
];

describe('countOccurrences', () => {
  it('counts an `every` stretch arithmetically, within startAt and endAt', () => {
    const timing: ScheduleTiming = { kind: 'every', everyMs: 1_000, startAt: T0, endAt: T0 + 3_600_000 };
    assert.equal(countOccurrences(timing, T0, T0 + 5_000), 5);
    assert.equal(countOccurrences(timing, T0 + 1, T0 + 5_001), 5);
    assert.equal(countOccurrences(timing, T0 - H, T0 + 1), 1, 'nothing before startAt');
    assert.equal(countOccurrences(timing, T0, T0 + 10 * H), 3_600, 'nothing at or after endAt');
    assert.equal(
      countOccurrences({ ...timing, endAt: null }, T0, T0 + 7 * 24 * H),
      604_800,
      'a week of seconds, at once',
    );
  });

  it('counts cron stretches exactly as a walk does, in UTC and in a zone away from its DST days', () => {
    const random = prng(7);
    for (const zone of ['UTC', 'Europe/Paris', 'Asia/Kolkata']) {
      for (const cron of CRONS) {
        const timing: ScheduleTiming = { kind: 'cron', cron, zone, startAt: T0 - 30 * 24 * H, endAt: null };
        for (let i = 0; i < 6; i++) {
          const from = T0 + Math.floor(random() * 20 * 24 * H);
          const span =
            cron.startsWith('*/5') || cron === '* * * * *'
              ? Math.floor(random() * 6 * H)
              : Math.floor(random() * 40 * 24 * H);
          assert.equal(
            countOccurrences(timing, from, from + span),
            walk(timing, from, from + span).length,
            `${cron} in ${zone} from ${new Date(from).toISOString()} for ${span} ms`,
          );
        }
      }
    }
  });
});

describe('lastOccurrences', () => {
  it('returns the last k of a stretch, as a walk does', () => {
    const random = prng(11);
    for (const cron of CRONS) {
      const timing: ScheduleTiming = {
        kind: 'cron',
        cron,
        zone: 'America/New_York',
        startAt: T0 - 30 * 24 * H,
        endAt: null,
      };
      const from = T0 + Math.floor(random() * 10 * 24 * H);
      const to = from + (cron.startsWith('*/5') || cron === '* * * * *' ? 2 * H : 60 * 24 * H);
      const all = walk(timing, from, to);
      for (const k of [1, 3, 100])
        assert.deepEqual(lastOccurrences(timing, from, to, k), all.slice(-k), `${cron}, k=${k}`);
    }
    const every: ScheduleTiming = { kind: 'every', everyMs: 1_000, startAt: T0, endAt: null };
    assert.deepEqual(lastOccurrences(every, T0, T0 + 10_500, 3), [T0 + 8_000, T0 + 9_000, T0 + 10_000]);
    assert.deepEqual(lastOccurrences(every, T0 + 9_500, T0 + 10_500, 3), [T0 + 10_000]);
  });
});

describe('occurrenceFires', () => {
  const every: ScheduleTiming = { kind: 'every', everyMs: 1_000, startAt: T0, endAt: null };
  const rule = (missed: MissedRule['missed'], catchUpMax = 3): MissedRule => ({
    missed,
    catchUpMax,
    missedAfterMs: 1_000,
  });
  const now = T0 + 10_000; // late: occurrences before T0 + 9,000
  const fired = (r: MissedRule) =>
    walk(every, T0, now + 1)
      .filter((at) => occurrenceFires(every, r, at, now))
      .map((at) => (at - T0) / 1_000);

  it('fires every on-time occurrence and follows `missed` for the late ones', () => {
    assert.deepEqual(fired(rule('skip')), [9, 10]);
    assert.deepEqual(fired(rule('fire-once')), [8, 9, 10], 'the latest late one');
    assert.deepEqual(fired(rule('fire-all', 3)), [6, 7, 8, 9, 10], 'the latest three late ones');
  });

  it('agrees with lastOccurrences on which late occurrences fire', () => {
    for (const k of [1, 2, 5]) {
      const late = lastOccurrences(every, T0, now - 1_000, k);
      const firing: number[] = walk(every, T0, now - 1_000).filter((at) =>
        occurrenceFires(every, rule(k === 1 ? 'fire-once' : 'fire-all', k), at, now),
      );
      assert.deepEqual(firing, late);
    }
  });
});
