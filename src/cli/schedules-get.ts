/** `belfry schedules get <id>` and `belfry schedules list`: GET /v1/schedules/{id}, GET /v1/schedules. */
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
import { renderSchedule, renderScheduleList, type ScheduleView } from './schedule-view.ts';

export const schedulesGet: Command = {
  usage: `Usage: belfry schedules get <id> [options]

Shows a schedule with its next occurrences in UTC and in its zone (GET /v1/schedules/{id}).

Options:
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const id = onePositional(positionals, 'id');
    const response = await ApiClient.fromFlags(values, 'tenant', io).request(
      'GET',
      `/v1/schedules/${encodeURIComponent(id)}`,
    );
    if (values.json) return printJson(io, response.body);
    io.out(renderSchedule(response.body as ScheduleView));
  },
};

const listOptions = { ...COMMON_OPTIONS, limit: { type: 'string' }, cursor: { type: 'string' } } as const;

export const schedulesList: Command = {
  usage: `Usage: belfry schedules list [options]

Lists the tenant's schedules by id (GET /v1/schedules).

Options:
  --limit <n>           1-1000 (default 100)
  --cursor <id>         the nextCursor of the previous page
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: listOptions, allowPositionals: true });
    if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
    const query = new URLSearchParams();
    if (values.limit !== undefined) query.set('limit', values.limit);
    if (values.cursor !== undefined) query.set('cursor', values.cursor);
    const qs = query.size > 0 ? `?${query}` : '';
    const response = await ApiClient.fromFlags(values, 'tenant', io).request('GET', `/v1/schedules${qs}`);
    if (values.json) return printJson(io, response.body);
    const body = response.body as { schedules: ScheduleView[]; nextCursor: string | null };
    io.out(renderScheduleList(body.schedules));
    if (body.nextCursor) io.out(`more: --cursor ${body.nextCursor}`);
  },
};
