/** `belfry events bulk` (POST /v1/events/bulk) and `belfry events bulk-status <id>` (GET /v1/bulk/{id}). */
import { ApiClient } from './client.ts';
import {
  COMMON_OPTIONS,
  commonUsage,
  onePositional,
  parseCommandLine,
  printJson,
  UsageError,
  type Command,
} from './command.ts';
import { cell, renderFields, timeCell } from './table.ts';

const usage = `Usage: belfry events bulk <action> [filters] [--dry-run]

Cancels, replays, shifts or redirects every event the filters select (POST /v1/events/bulk).
Try it with --dry-run first: it counts and shows a sample, and changes nothing. Without it, the
change runs in the background as a job; follow it with 'belfry events bulk-status <id>'.

Action (exactly one):
  --cancel              cancel (scheduled or awaiting a retry)
  --replay              deliver again (archived or discarded)
  --shift <+dur|-dur>   move fireAt by a signed duration: +1h, or --shift=-30m (scheduled)
  --redirect <dest>     send to another registered destination (scheduled)

Filters (at least one):
  --state <s>           events in this state
  --destination <d>     events for this destination
  --group <g>           events of this group
  --type <t>            events of this type
  --tag <k=v>           events with this tag (repeatable: all must match)
  --from <time>         events due at or after this time (RFC 3339 or epoch ms)
  --to <time>           events due before this time
  --dry-run             count and sample only
${commonUsage('BELFRY_API_KEY')}`;

const options = {
  ...COMMON_OPTIONS,
  cancel: { type: 'boolean' },
  replay: { type: 'boolean' },
  shift: { type: 'string' },
  redirect: { type: 'string' },
  state: { type: 'string' },
  destination: { type: 'string' },
  group: { type: 'string' },
  type: { type: 'string' },
  tag: { type: 'string', multiple: true },
  from: { type: 'string' },
  to: { type: 'string' },
  'dry-run': { type: 'boolean' },
} as const;

export interface BulkFlags {
  cancel?: boolean;
  replay?: boolean;
  shift?: string;
  redirect?: string;
  state?: string;
  destination?: string;
  group?: string;
  type?: string;
  tag?: string[];
  from?: string;
  to?: string;
  'dry-run'?: boolean;
}

function timeValue(value: string): string | number {
  return /^\d{1,16}$/.test(value) ? Number(value) : value;
}

/** The request body from the flags; throws UsageError on what the API would refuse. */
export function buildBulkBody(flags: BulkFlags): Record<string, unknown> {
  const actions: unknown[] = [];
  if (flags.cancel) actions.push('cancel');
  if (flags.replay) actions.push('replay');
  if (flags.shift !== undefined) {
    if (!/^[+-]\d+(ms|s|m|h|d)$/.test(flags.shift))
      throw new UsageError(`--shift: expected a signed duration such as +1h or -30m: ${flags.shift}`);
    actions.push({ shift: flags.shift });
  }
  if (flags.redirect !== undefined) actions.push({ redirect: flags.redirect });
  if (actions.length !== 1)
    throw new UsageError('give exactly one action: --cancel, --replay, --shift <+dur> or --redirect <dest>');
  const filter: Record<string, unknown> = {};
  for (const k of ['state', 'destination', 'group', 'type'] as const) if (flags[k] !== undefined) filter[k] = flags[k];
  if (flags.tag !== undefined) {
    const tags: Record<string, string> = {};
    for (const t of flags.tag) {
      const eq = t.indexOf('=');
      if (eq < 1) throw new UsageError(`--tag: expected key=value: ${t}`);
      tags[t.slice(0, eq)] = t.slice(eq + 1);
    }
    filter.tags = tags;
  }
  if (flags.from !== undefined) filter.fireAtFrom = timeValue(flags.from);
  if (flags.to !== undefined) filter.fireAtTo = timeValue(flags.to);
  if (Object.keys(filter).length === 0)
    throw new UsageError('give at least one filter (--state, --destination, --group, --type, --tag, --from, --to)');
  return { filter, action: actions[0], ...(flags['dry-run'] ? { dryRun: true } : {}) };
}

interface JobView {
  id?: string;
  state?: string;
  matched?: number;
  done?: number;
  skipped?: number;
  errors?: string[];
  createdAt?: string;
  finishedAt?: string | null;
}

export function renderJob(job: JobView): string {
  return renderFields([
    ['id', cell(job.id)],
    ['state', cell(job.state)],
    ['matched', cell(job.matched)],
    ['done', cell(job.done)],
    ['skipped', cell(job.skipped)],
    ['errors', cell(job.errors && job.errors.length > 0 ? job.errors.join('; ') : undefined)],
    ['created at', timeCell(job.createdAt)],
    ['finished at', timeCell(job.finishedAt ?? undefined)],
  ]);
}

export const eventsBulk: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options, allowPositionals: true });
    if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
    const body = buildBulkBody(values as BulkFlags);
    const client = ApiClient.fromFlags(values, 'tenant', io);
    const response = await client.request('POST', '/v1/events/bulk', { body });
    if (values.json) return printJson(io, response.body);
    const r = response.body as {
      matched?: number;
      exact?: boolean;
      applicable?: number;
      sample?: { id?: string; state?: string }[];
      id?: string;
    };
    if (body.dryRun) {
      io.out(
        `dry run: ${r.exact ? '' : 'at least '}${r.matched} events selected, ${r.applicable} of them in a state the action applies to; nothing changed`,
      );
      for (const e of r.sample ?? []) io.out(`  ${cell(e.id)}  ${cell(e.state)}`);
      return;
    }
    io.out(`started bulk job ${r.id}; follow it with: belfry events bulk-status ${r.id}`);
  },
};

const statusUsage = `Usage: belfry events bulk-status <id> [options]

Shows a bulk job's state and progress (GET /v1/bulk/{id}).

${commonUsage('BELFRY_API_KEY')}`;

export const eventsBulkStatus: Command = {
  usage: statusUsage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const id = onePositional(positionals, 'id');
    const client = ApiClient.fromFlags(values, 'tenant', io);
    const response = await client.request('GET', `/v1/bulk/${encodeURIComponent(id)}`);
    if (values.json) return printJson(io, response.body);
    io.out(renderJob(response.body as JobView));
  },
};
