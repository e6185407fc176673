/**
 * DST edges of 11 zones (occurrences-dst.cases.ts), checked three ways: against the hand-derived
 * table, against a brute-force oracle that walks every minute with its own Intl formatter, and in
 * child processes whose own TZ differs (UTC, Los Angeles, Kolkata's +05:30, Lord Howe), which must
 * change nothing.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { test } from 'node:test';
import { DST_CASES, computeDstCases } from './occurrences-dst.cases.ts';
import { parseCron } from './occurrences.ts';

const run = promisify(execFile);
const FIXTURE = fileURLToPath(new URL('./occurrences-dst.fixture.ts', import.meta.url));
const PROCESS_ZONES = ['UTC', 'America/Los_Angeles', 'Asia/Kolkata', 'Australia/Lord_Howe'];

/** The wall time of `t` in `zone`, from a formatter of its own (not zone.ts's). */
function oracleWall(fmt: Intl.DateTimeFormat, t: number): number {
  const p = Object.fromEntries(fmt.formatToParts(t).map((x) => [x.type, x.value]));
  return Date.UTC(
    Number(p.year),
    Number(p.month) - 1,
    Number(p.day),
    Number(p.hour),
    Number(p.minute),
    Number(p.second),
  );
}

/**
 * The rules stated plainly: walk time a minute at a time; whenever the wall clock passes wall
 * times it has not shown before (one minute normally, an hour over a gap, none while it repeats
 * an hour) and the cron matches any of them, the schedule fires once, at this minute.
 */
function oracle(zone: string, cron: string, from: number, count: number): string[] {
  const fields = parseCron(cron);
  const matches = (w: number) => {
    const d = new Date(w);
    const dom = fields.daysOfMonth.has(d.getUTCDate());
    const dow = fields.daysOfWeek.has(d.getUTCDay());
    return (
      fields.months.has(d.getUTCMonth() + 1) &&
      (fields.dayEither ? dom || dow : dom && dow) &&
      fields.hours.has(d.getUTCHours()) &&
      fields.minutes.has(d.getUTCMinutes()) &&
      fields.seconds.has(d.getUTCSeconds())
    );
  };
  const fmt = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  });
  const step = fields.seconds.size === 1 && fields.seconds.has(0) ? 60_000 : 1000;
  const out: string[] = [];
  let shown = oracleWall(fmt, from);
  for (let t = Math.floor(from / step) * step + step; out.length < count && t < from + 5 * 86_400_000; t += step) {
    const w = oracleWall(fmt, t);
    if (w <= shown) continue;
    let fires = false;
    for (let x = Math.floor(shown / step) * step + step; x <= w && !fires; x += step) fires = matches(x);
    if (fires) out.push(new Date(t).toISOString());
    shown = w;
  }
  return out;
}

test('each DST case gives the occurrences derived from the zone rules', () => {
  const results = computeDstCases();
  for (const c of DST_CASES)
    assert.deepEqual(results[c.name], c.expected, `${c.name} (${c.zone}, "${c.cron}" after ${c.from})`);
});

test('each DST case agrees with the minute-by-minute oracle', () => {
  const results = computeDstCases();
  for (const c of DST_CASES) {
    assert.deepEqual(
      oracle(c.zone, c.cron, Date.parse(c.from), c.expected.length),
      results[c.name],
      `oracle: ${c.name}`,
    );
  }
});

test('the process time zone changes no occurrence', async () => {
  const expected = Object.fromEntries(DST_CASES.map((c) => [c.name, c.expected]));
  const runs = await Promise.all(
    PROCESS_ZONES.map((tz) =>
      run(process.execPath, ['--import', 'tsx', FIXTURE], { env: { ...process.env, TZ: tz }, timeout: 60_000 }),
    ),
  );
  const offsets = new Set<number>();
  runs.forEach(({ stdout }, i) => {
    const got = JSON.parse(stdout) as { tz: string; offsetMin: number; results: Record<string, string[]> };
    assert.equal(got.tz, PROCESS_ZONES[i]);
    offsets.add(got.offsetMin);
    assert.deepEqual(got.results, expected, `under TZ=${PROCESS_ZONES[i]}`);
  });
  // The children really ran in different zones.
  assert.equal(offsets.size, PROCESS_ZONES.length);
});
