/** `belfry events cancel <id>`: DELETE /v1/events/{id}. */
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, commonUsage, onePositional, parseCommandLine, printJson, type Command } from './command.ts';
import { renderEvent, type EventView } from './event-view.ts';

const usage = `Usage: belfry events cancel <id> [options]

Cancels an event that is scheduled or awaiting a retry (DELETE /v1/events/{id}).
The answer is definite: canceled, or an error naming the state the event already reached.

Options:
  --if-match <etag>     cancel only if the event is still at this version (as 'events get' shows)
${commonUsage('BELFRY_API_KEY')}`;

const options = { ...COMMON_OPTIONS, 'if-match': { type: 'string' } } as const;

export const eventsCancel: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options, allowPositionals: true });
    const id = onePositional(positionals, 'id');
    const client = ApiClient.fromFlags(values, 'tenant', io);
    const headers = values['if-match'] === undefined ? undefined : { 'if-match': values['if-match'] };
    const response = await client.request('DELETE', `/v1/events/${encodeURIComponent(id)}`, { headers });
    if (values.json) return printJson(io, response.body);
    io.out(renderEvent(response.body as EventView));
  },
};
