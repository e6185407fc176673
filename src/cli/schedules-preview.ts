/** `belfry schedules preview`: POST /v1/schedules/preview. */
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, commonUsage, parseCommandLine, printJson, UsageError, type Command } from './command.ts';
import { renderOccurrences, type OccurrenceView } from './schedule-view.ts';
import { TIMING_OPTIONS, TIMING_USAGE, timingBody } from './schedules-create.ts';

const usage = `Usage: belfry schedules preview (--cron <expr> | --every <duration>) [options]

Shows the next occurrences of a timing, in UTC and in its zone, without creating anything.

Options:
${TIMING_USAGE}
  --count <n>           how many (1-100, default 10)
${commonUsage('BELFRY_API_KEY')}`;

const options = { ...COMMON_OPTIONS, ...TIMING_OPTIONS, count: { type: 'string' } } as const;

export const schedulesPreview: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options, allowPositionals: true });
    if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
    const body = timingBody(values);
    if (values.count !== undefined) {
      if (!/^\d{1,3}$/.test(values.count)) throw new UsageError(`--count: not a whole number: ${values.count}`);
      body.count = Number(values.count);
    }
    const client = ApiClient.fromFlags(values, 'tenant', io);
    const response = await client.request('POST', '/v1/schedules/preview', { body });
    if (values.json) return printJson(io, response.body);
    io.out(renderOccurrences((response.body as { next?: OccurrenceView[] }).next));
  },
};
