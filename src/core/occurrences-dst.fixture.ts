/** Prints the DST table's occurrences as this process computes them (run by occurrences-dst.test.ts under several TZ values). */
import { computeDstCases } from './occurrences-dst.cases.ts';

process.stdout.write(
  JSON.stringify({
    tz: process.env.TZ ?? null,
    offsetMin: new Date(Date.UTC(2026, 0, 1)).getTimezoneOffset(),
    results: computeDstCases(),
  }),
);
