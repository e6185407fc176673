/**
 * The DST table: real transitions of 11 zones, each with the occurrences a few crons must have
 * around it (UTC), derived by hand from the zone's rules and checked against a brute-force oracle
 * in occurrences-dst.test.ts. Shared by the test and the fixture it runs under other process TZs.
 */
import { nextOccurrences } from './occurrences.ts';

export interface DstCase {
  name: string;
  zone: string;
  cron: string;
  /** Occurrences strictly after this instant. */
  from: string;
  /** The first occurrences, UTC. */
  expected: string[];
}

const z = (s: string) => `${s}.000Z`;

export const DST_CASES: DstCase[] = [
  // New York, 2026-03-08 02:00 EST → 03:00 EDT: 02:30 does not exist, fires at the jump (03:00 EDT).
  {
    name: 'New York spring gap',
    zone: 'America/New_York',
    cron: '30 2 * * *',
    from: '2026-03-07T12:00:00Z',
    expected: [z('2026-03-08T07:00:00'), z('2026-03-09T06:30:00')],
  },
  // New York, 2026-11-01 02:00 EDT → 01:00 EST: 01:30 happens twice, fires at the first (EDT).
  {
    name: 'New York fall repeat',
    zone: 'America/New_York',
    cron: '30 1 * * *',
    from: '2026-10-31T12:00:00Z',
    expected: [z('2026-11-01T05:30:00'), z('2026-11-02T06:30:00')],
  },
  // Hourly over the fall back: 01:00 EDT, (01:00 EST is the same wall time: not again), 02:00 EST.
  {
    name: 'New York hourly over fall back',
    zone: 'America/New_York',
    cron: '0 * * * *',
    from: '2026-11-01T04:30:00Z',
    expected: [z('2026-11-01T05:00:00'), z('2026-11-01T07:00:00'), z('2026-11-01T08:00:00')],
  },
  // London, 2026-03-29 01:00 GMT → 02:00 BST.
  {
    name: 'London spring gap',
    zone: 'Europe/London',
    cron: '30 1 * * *',
    from: '2026-03-28T12:00:00Z',
    expected: [z('2026-03-29T01:00:00'), z('2026-03-30T00:30:00')],
  },
  // London, 2026-10-25 02:00 BST → 01:00 GMT.
  {
    name: 'London fall repeat',
    zone: 'Europe/London',
    cron: '30 1 * * *',
    from: '2026-10-24T12:00:00Z',
    expected: [z('2026-10-25T00:30:00'), z('2026-10-26T01:30:00')],
  },
  // Paris, 2026-03-29 02:00 CET → 03:00 CEST: four skipped quarter hours fire once, at the jump.
  {
    name: 'Paris quarter hours in the gap',
    zone: 'Europe/Paris',
    cron: '*/15 2 * * *',
    from: '2026-03-28T12:00:00Z',
    expected: [z('2026-03-29T01:00:00'), z('2026-03-30T00:00:00'), z('2026-03-30T00:15:00')],
  },
  // Paris, 2026-10-25 03:00 CEST → 02:00 CET.
  {
    name: 'Paris fall repeat',
    zone: 'Europe/Paris',
    cron: '30 2 * * *',
    from: '2026-10-24T12:00:00Z',
    expected: [z('2026-10-25T00:30:00'), z('2026-10-26T01:30:00')],
  },
  // Sydney, 2026-04-05 03:00 AEDT → 02:00 AEST.
  {
    name: 'Sydney fall repeat',
    zone: 'Australia/Sydney',
    cron: '30 2 * * *',
    from: '2026-04-04T00:00:00Z',
    expected: [z('2026-04-04T15:30:00'), z('2026-04-05T16:30:00')],
  },
  // Sydney, 2026-10-04 02:00 AEST → 03:00 AEDT.
  {
    name: 'Sydney spring gap',
    zone: 'Australia/Sydney',
    cron: '30 2 * * *',
    from: '2026-10-03T00:00:00Z',
    expected: [z('2026-10-03T16:00:00'), z('2026-10-04T15:30:00')],
  },
  // Lord Howe, 2026-10-04 02:00 → 02:30 (+10:30 → +11): a 30-minute gap.
  {
    name: 'Lord Howe 30-minute gap',
    zone: 'Australia/Lord_Howe',
    cron: '15 2 * * *',
    from: '2026-10-03T00:00:00Z',
    expected: [z('2026-10-03T15:30:00'), z('2026-10-04T15:15:00')],
  },
  // Lord Howe, 2026-04-05 02:00 → 01:30 (+11 → +10:30): 01:30-02:00 twice.
  {
    name: 'Lord Howe 30-minute repeat',
    zone: 'Australia/Lord_Howe',
    cron: '*/15 * * * *',
    from: '2026-04-04T14:20:00Z',
    expected: [z('2026-04-04T14:30:00'), z('2026-04-04T14:45:00'), z('2026-04-04T15:30:00'), z('2026-04-04T15:45:00')],
  },
  // Santiago, 2026-09-06 00:00 -04 → 01:00 -03: midnight does not exist.
  {
    name: 'Santiago midnight gap',
    zone: 'America/Santiago',
    cron: '0 0 * * *',
    from: '2026-09-05T00:00:00Z',
    expected: [z('2026-09-05T04:00:00'), z('2026-09-06T04:00:00'), z('2026-09-07T03:00:00')],
  },
  // Santiago, 2026-04-05 00:00 -03 → 2026-04-04 23:00 -04: 23:30 on the 4th happens twice.
  {
    name: 'Santiago 23:30 repeat',
    zone: 'America/Santiago',
    cron: '30 23 * * *',
    from: '2026-04-04T12:00:00Z',
    expected: [z('2026-04-05T02:30:00'), z('2026-04-06T03:30:00')],
  },
  // Cairo (DST back since 2023), 2026-04-24 00:00 EET → 01:00 EEST.
  {
    name: 'Cairo midnight gap',
    zone: 'Africa/Cairo',
    cron: '0 0 * * *',
    from: '2026-04-22T12:00:00Z',
    expected: [z('2026-04-22T22:00:00'), z('2026-04-23T22:00:00'), z('2026-04-24T21:00:00')],
  },
  // Cairo, 2026-10-29 24:00 EEST → 23:00 EET: 23:30 on the 29th twice.
  {
    name: 'Cairo 23:30 repeat',
    zone: 'Africa/Cairo',
    cron: '30 23 * * *',
    from: '2026-10-29T12:00:00Z',
    expected: [z('2026-10-29T20:30:00'), z('2026-10-30T21:30:00')],
  },
  // Havana, 2026-03-08 00:00 CST → 01:00 CDT: the midnight change.
  {
    name: 'Havana midnight gap',
    zone: 'America/Havana',
    cron: '0 0 * * *',
    from: '2026-03-06T12:00:00Z',
    expected: [z('2026-03-07T05:00:00'), z('2026-03-08T05:00:00'), z('2026-03-09T04:00:00')],
  },
  // Havana, 2026-11-01 01:00 CDT → 00:00 CST: 00:30 twice.
  {
    name: 'Havana 00:30 repeat',
    zone: 'America/Havana',
    cron: '30 0 * * *',
    from: '2026-10-31T12:00:00Z',
    expected: [z('2026-11-01T04:30:00'), z('2026-11-02T05:30:00')],
  },
  // Apia skipped 2011-12-30 entirely (-10 → +14): noon that day fires at the jump.
  {
    name: 'Apia skipped day',
    zone: 'Pacific/Apia',
    cron: '0 12 * * *',
    from: '2011-12-28T12:00:00Z',
    expected: [z('2011-12-28T22:00:00'), z('2011-12-29T22:00:00'), z('2011-12-30T10:00:00'), z('2011-12-30T22:00:00')],
  },
  // Tehran's last DST start, 2022-03-22 00:00 → 01:00 (+03:30 → +04:30); abolished from 2023.
  {
    name: 'Tehran last gap',
    zone: 'Asia/Tehran',
    cron: '0 0 * * *',
    from: '2022-03-20T12:00:00Z',
    expected: [z('2022-03-20T20:30:00'), z('2022-03-21T20:30:00'), z('2022-03-22T19:30:00')],
  },
  // Tehran 2023-03-22: no DST any more, midnight is an ordinary +03:30 midnight.
  {
    name: 'Tehran after abolition',
    zone: 'Asia/Tehran',
    cron: '0 0 * * *',
    from: '2023-03-20T12:00:00Z',
    expected: [z('2023-03-20T20:30:00'), z('2023-03-21T20:30:00'), z('2023-03-22T20:30:00')],
  },
  // Mexico City abolished DST in 2022: 2023-04-02 02:30 exists (it was the gap before).
  {
    name: 'Mexico City after abolition',
    zone: 'America/Mexico_City',
    cron: '30 2 * * *',
    from: '2023-04-01T12:00:00Z',
    expected: [z('2023-04-02T08:30:00'), z('2023-04-03T08:30:00')],
  },
  // Seconds field across the London gap: 00:59:59 GMT, then 02:00:00 BST (01:00:00 UTC).
  {
    name: 'London seconds over the gap',
    zone: 'Europe/London',
    cron: '59,0 59,0 0,1,2 29 3 *',
    from: '2026-03-29T00:58:00Z',
    expected: [
      z('2026-03-29T00:59:00'),
      z('2026-03-29T00:59:59'),
      z('2026-03-29T01:00:00'),
      z('2026-03-29T01:00:59'),
      z('2026-03-29T01:59:00'),
    ],
  },
];

/** Each case's occurrences as this process computes them. */
export function computeDstCases(): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const c of DST_CASES) {
    const timing = { kind: 'cron' as const, cron: c.cron, zone: c.zone, startAt: 0, endAt: null };
    out[c.name] = nextOccurrences(timing, Date.parse(c.from), c.expected.length).map((t) => new Date(t).toISOString());
  }
  return out;
}
