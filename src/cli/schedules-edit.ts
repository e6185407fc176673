/** `belfry schedules edit <id>`: PATCH /v1/schedules/{id}, through the SDK's `schedules.patch`. */
import type { SchedulePatch } from '@belfry/client';
import { ApiClient } from './client.ts';
import {
  COMMON_OPTIONS,
  commonUsage,
  onePositional,
  parseCommandLine,
  printJson,
  UsageError,
  type Command,
  type Io,
} from './command.ts';
import { parseHeaders, readPayload } from './events-schedule.ts';
import { ifMatchFlag, intFlag } from './flags.ts';
import { renderSchedule, type ScheduleView } from './schedule-view.ts';
import { TIMING_OPTIONS, type TimingFlags } from './schedules-create.ts';

const usage = `Usage: belfry schedules edit <id> [options]

Changes a schedule (PATCH /v1/schedules/{id}); what is not given stays. --cron replaces an
--every timing and the other way round. Occurrences already fired stay as they were.

Options:
  --cron <expr>         5 fields (minute hour day month weekday) or 6 (seconds first)
  --every <duration>    or elapsed time: 30s, 15m, 1h (at least 1s)
  --timezone <zone>     IANA zone of the cron, e.g. Europe/Paris
  --start-at <time>     first possible occurrence (RFC 3339 or epoch ms)
  --end-at <time>       no occurrence at or after this time ('none': no end)
  --missed <policy>     skip, fire-once or fire-all
  --catch-up-max <n>    fire-all makes at most n missed occurrences
  --destination <d>     a registered destination name, or an http(s):// URL
  --payload <json>      each occurrence's payload, as JSON
  --payload-file <f>    or read it from a file ('-' for stdin)
  --group <g>           occurrences of one group are delivered in order
  --header <k=v>        the headers sent with each delivery (repeatable; replaces them all)
  --type <t>            the kind of each occurrence's event
  --if-match <version>  only if the schedule is still at this version (as 'schedules get' shows)
${commonUsage('BELFRY_API_KEY')}`;

const options = {
  ...COMMON_OPTIONS,
  ...TIMING_OPTIONS,
  destination: { type: 'string' },
  payload: { type: 'string' },
  'payload-file': { type: 'string' },
  group: { type: 'string' },
  header: { type: 'string', multiple: true },
  type: { type: 'string' },
  'if-match': { type: 'string' },
} as const;

export interface ScheduleEditFlags extends TimingFlags {
  destination?: string;
  payload?: string;
  'payload-file'?: string;
  group?: string;
  header?: string[];
  type?: string;
}

const numeric = (text: string) => (/^\d+$/.test(text) ? Number(text) : text);

/** The PATCH body from the flags; the API checks the values (a 400 names the field). */
export async function buildSchedulePatch(flags: ScheduleEditFlags, io: Pick<Io, 'readFile'>): Promise<SchedulePatch> {
  const patch: Record<string, unknown> = {};
  if (flags.cron !== undefined && flags.every !== undefined) throw new UsageError('give --cron or --every, not both');
  if (flags.cron !== undefined) patch.cron = flags.cron;
  if (flags.every !== undefined) patch.every = numeric(flags.every);
  if (flags.timezone !== undefined) patch.timezone = flags.timezone;
  if (flags['start-at'] !== undefined) patch.startAt = numeric(flags['start-at']);
  if (flags['end-at'] !== undefined) patch.endAt = flags['end-at'] === 'none' ? null : numeric(flags['end-at']);
  if (flags.missed !== undefined) patch.missed = flags.missed;
  if (flags['catch-up-max'] !== undefined) patch.catchUpMax = intFlag('--catch-up-max', flags['catch-up-max'], 0, 1000);
  if (flags.destination !== undefined)
    patch.destination = /^https?:\/\//i.test(flags.destination) ? { url: flags.destination } : flags.destination;
  const payload = await readPayload(flags, io);
  if (payload !== undefined) patch.payload = payload;
  if (flags.group !== undefined) patch.group = flags.group;
  if (flags.header !== undefined) patch.headers = parseHeaders(flags.header);
  if (flags.type !== undefined) patch.type = flags.type;
  if (Object.keys(patch).length === 0)
    throw new UsageError("nothing to change: give a timing or template flag (see 'belfry schedules edit --help')");
  return patch as SchedulePatch;
}

export const schedulesEdit: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options, allowPositionals: true });
    const id = onePositional(positionals, 'id');
    const patch = await buildSchedulePatch(values, io);
    const ifMatch = ifMatchFlag(values['if-match']);
    const schedule = await ApiClient.fromFlags(values, 'tenant', io).call((b) =>
      b.schedules.patch(id, patch, { ifMatch }),
    );
    if (values.json) return printJson(io, schedule);
    io.out(renderSchedule(schedule as ScheduleView));
  },
};
