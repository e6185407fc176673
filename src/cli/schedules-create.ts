/** `belfry schedules create`: POST /v1/schedules (and the body builder `schedules preview` shares). */
import { ApiClient } from './client.ts';
import {
  COMMON_OPTIONS,
  commonUsage,
  parseCommandLine,
  printJson,
  UsageError,
  type Command,
  type Io,
} from './command.ts';
import { buildScheduleBody as buildEventBody } from './events-schedule.ts';
import { renderSchedule, type ScheduleView } from './schedule-view.ts';

export const TIMING_USAGE = `  --cron <expr>         5 fields (minute hour day month weekday) or 6 (seconds first)
  --every <duration>    or elapsed time: 30s, 15m, 1h (at least 1s)
  --timezone <zone>     IANA zone of the cron (default UTC), e.g. Europe/Paris
  --start-at <time>     first possible occurrence (RFC 3339 or epoch ms; default now)
  --end-at <time>       no occurrence at or after this time
  --missed <policy>     skip (default), fire-once or fire-all: occurrences missed while down or paused
  --catch-up-max <n>    fire-all makes at most n missed occurrences (default 100)`;

const usage = `Usage: belfry schedules create (--cron <expr> | --every <duration>) --destination <name|url> [options]

Creates a recurring schedule (POST /v1/schedules). Each occurrence becomes an event <id>@<UTC time>.

Options:
${TIMING_USAGE}
  --destination <d>     a registered destination name, or an http(s):// URL
  --payload <json>      each occurrence's payload, as JSON
  --payload-file <f>    or read it from a file ('-' for stdin)
  --id <id>             the schedule id (made by Belfry if left out)
  --group <g>           occurrences of one group are delivered in order
  --header <k=v>        a header sent with each delivery (repeatable)
  --type <t>            the kind of each occurrence's event (a list filter, sent as belfry-type)
  --paused              create it paused
${commonUsage('BELFRY_API_KEY')}`;

export const TIMING_OPTIONS = {
  cron: { type: 'string' },
  every: { type: 'string' },
  timezone: { type: 'string' },
  'start-at': { type: 'string' },
  'end-at': { type: 'string' },
  missed: { type: 'string' },
  'catch-up-max': { type: 'string' },
} as const;

const options = {
  ...COMMON_OPTIONS,
  ...TIMING_OPTIONS,
  destination: { type: 'string' },
  payload: { type: 'string' },
  'payload-file': { type: 'string' },
  id: { type: 'string' },
  group: { type: 'string' },
  header: { type: 'string', multiple: true },
  type: { type: 'string' },
  paused: { type: 'boolean' },
} as const;

export interface TimingFlags {
  cron?: string;
  every?: string;
  timezone?: string;
  'start-at'?: string;
  'end-at'?: string;
  missed?: string;
  'catch-up-max'?: string;
}

const numeric = (text: string) => (/^\d+$/.test(text) ? Number(text) : text);

/** The timing fields of a schedule body from the flags; the API checks them (400 naming the field). */
export function timingBody(flags: TimingFlags): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (flags.cron !== undefined) body.cron = flags.cron;
  if (flags.every !== undefined) body.every = numeric(flags.every);
  if (flags.timezone !== undefined) body.timezone = flags.timezone;
  if (flags['start-at'] !== undefined) body.startAt = numeric(flags['start-at']);
  if (flags['end-at'] !== undefined) body.endAt = numeric(flags['end-at']);
  if (flags.missed !== undefined) body.missed = flags.missed;
  if (flags['catch-up-max'] !== undefined) {
    if (!/^\d{1,4}$/.test(flags['catch-up-max']))
      throw new UsageError(`--catch-up-max: not a whole number: ${flags['catch-up-max']}`);
    body.catchUpMax = Number(flags['catch-up-max']);
  }
  if (body.cron === undefined && body.every === undefined) throw new UsageError('give --cron or --every');
  return body;
}

export async function buildScheduleCreateBody(
  flags: TimingFlags & {
    destination?: string;
    payload?: string;
    'payload-file'?: string;
    id?: string;
    group?: string;
    header?: string[];
    type?: string;
    paused?: boolean;
  },
  io: Pick<Io, 'readFile'>,
) {
  const timing = timingBody(flags);
  const template = await buildEventBody(
    {
      destination: flags.destination,
      payload: flags.payload,
      'payload-file': flags['payload-file'],
      id: flags.id,
      group: flags.group,
      header: flags.header,
      type: flags.type,
    },
    io,
  );
  return { ...template, ...timing, ...(flags.paused ? { paused: true } : {}) };
}

export const schedulesCreate: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options, allowPositionals: true });
    if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
    const body = await buildScheduleCreateBody(values, io);
    const client = ApiClient.fromFlags(values, 'tenant', io);
    const response = await client.request('POST', '/v1/schedules', { body });
    if (values.json) return printJson(io, response.body);
    io.out(response.status === 200 ? 'already created (same id and body)' : 'created');
    io.out(renderSchedule(response.body as ScheduleView));
  },
};
