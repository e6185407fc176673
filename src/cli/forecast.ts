/** `belfry forecast`: GET /v1/forecast, the scheduled events due per bucket ahead, spikes flagged. */
import type { Forecast } from '@belfry/client';
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, parseCommandLine, printJson, UsageError, type Command } from './command.ts';
import { noPositionals } from './flags.ts';
import { cell, renderTable, timeCell } from './table.ts';

const usage = `Usage: belfry forecast [options]

Shows how many scheduled events fall due in each bucket of a window ahead, flagging spikes
(GET /v1/forecast). Buckets with no events are left out of the table; --json has them all.

Options:
  --from <time>         start: now (default), an RFC 3339 time, epoch ms, or a duration from now (10m)
  --to <time>           end: an RFC 3339 time, epoch ms, or a duration after --from (default 1h)
  --bucket <dur>        bucket size, 1s to 1d (default 1m); at most 1440 buckets
  --by <split>          count each bucket per destination, or per tenant (with --admin)
  --admin               every tenant's events, with the admin key (env BELFRY_ADMIN_KEY)
  --url <url>           Belfry base URL (env BELFRY_URL, default http://127.0.0.1:7070)
  --key <key>           API key (env BELFRY_API_KEY), or the admin key with --admin
  --json                print the raw JSON response
  -h, --help            show this help`;

const options = {
  ...COMMON_OPTIONS,
  from: { type: 'string' },
  to: { type: 'string' },
  bucket: { type: 'string' },
  by: { type: 'string' },
  admin: { type: 'boolean' },
} as const;

/** The split of a bucket: `a=3, b=1`, largest first. */
function byCell(by: Record<string, number> | undefined): string {
  if (!by) return '-';
  return Object.entries(by)
    .sort((a, b) => b[1] - a[1])
    .map(([key, count]) => `${key}=${count}`)
    .join(', ');
}

export function renderForecast(f: Forecast): string {
  const lines = [
    `${f.total} scheduled events due from ${timeCell(f.from)} to ${timeCell(f.to)} (buckets of ${f.bucket})`,
  ];
  const busy = f.buckets.filter((b) => b.count > 0);
  if (busy.length > 0) {
    const headers = ['AT', 'COUNT', 'SPIKE', ...(f.by ? [`BY ${f.by.toUpperCase()}`] : [])];
    const rows = busy.map((b) => [
      timeCell(b.at),
      String(b.count),
      b.spike ? 'yes' : '-',
      ...(f.by ? [byCell(b.by)] : []),
    ]);
    lines.push('', renderTable(headers, rows));
  }
  if (f.spikes.length > 0) lines.push('', `spikes at: ${f.spikes.map((s) => cell(s)).join(', ')}`);
  return lines.join('\n');
}

export const forecast: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options, allowPositionals: true });
    noPositionals(positionals);
    const by = values.by;
    if (by !== undefined && by !== 'destination' && by !== 'tenant')
      throw new UsageError(`--by: expected destination or tenant: ${by}`);
    if (by === 'tenant' && !values.admin)
      throw new UsageError('--by tenant needs --admin (every tenant, the admin key)');
    if (by === 'destination' && values.admin)
      throw new UsageError('--by destination is per tenant: leave out --admin, or use --by tenant');
    const { from, to, bucket } = values;
    const client = ApiClient.fromFlags(values, values.admin ? 'admin' : 'tenant', io);
    const result = await client.call((b) => b.forecast({ from, to, bucket, by }));
    if (values.json) return printJson(io, result);
    io.out(renderForecast(result));
  },
};
