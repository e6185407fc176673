/** `belfry events get <id>`: GET /v1/events/{id}. */
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, commonUsage, onePositional, parseCommandLine, printJson, type Command } from './command.ts';
import { renderEvent, type EventView } from './event-view.ts';

const usage = `Usage: belfry events get <id> [options]

Shows one event: its state, fire time, attempts and last error (GET /v1/events/{id}).

Options:
${commonUsage('BELFRY_API_KEY')}`;

export const eventsGet: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const id = onePositional(positionals, 'id');
    const client = ApiClient.fromFlags(values, 'tenant', io);
    const response = await client.request('GET', `/v1/events/${encodeURIComponent(id)}`);
    if (values.json) return printJson(io, response.body);
    io.out(renderEvent(response.body as EventView));
  },
};
