/** `belfry events list`: GET /v1/events, one page. */
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, commonUsage, parseCommandLine, printJson, UsageError, type Command } from './command.ts';
import { destinationCell, type EventView } from './event-view.ts';
import { cell, renderTable, timeCell } from './table.ts';

const usage = `Usage: belfry events list [options]

Lists events, newest first, one page at a time (GET /v1/events).

Options:
  --state <s>           only events in this state (scheduled, executing, awaiting_retry, succeeded, ...)
  --destination <d>     only events for this destination
  --group <g>           only events of this group
  --type <t>            only events of this type
  --schedule <id>       only a schedule's occurrences, newest first (combines with no other filter)
  --from <time>         only events due at or after this time (RFC 3339 or epoch ms)
  --to <time>           only events due before this time
  --limit <n>           page size, 1 to 1000 (default 100)
  --cursor <c>          the page after this cursor (printed at the end of the previous page)
${commonUsage('BELFRY_API_KEY')}`;

const options = {
  ...COMMON_OPTIONS,
  state: { type: 'string' },
  destination: { type: 'string' },
  group: { type: 'string' },
  type: { type: 'string' },
  schedule: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
} as const;

/** The API's largest page. */
const LIMIT_MAX = 1000;

interface EventPage {
  events?: EventView[];
  nextCursor?: string | null;
}

/** Renders one page of events as a table, with the next cursor below it when there is one. */
export function renderEventPage(page: EventPage): string {
  const events = page.events ?? [];
  const lines: string[] = [];
  if (events.length === 0) {
    lines.push('no events');
  } else {
    const rows = events.map((e) => [
      cell(e.id),
      cell(e.state),
      timeCell(e.fireAt),
      destinationCell(e.destination),
      cell(e.group),
      cell(e.attempts),
      cell(e.lastStatus),
    ]);
    lines.push(renderTable(['ID', 'STATE', 'FIRE AT', 'DESTINATION', 'GROUP', 'ATTEMPTS', 'LAST STATUS'], rows));
  }
  if (page.nextCursor) lines.push('', `more: --cursor ${page.nextCursor}`);
  return lines.join('\n');
}

export const eventsList: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options, allowPositionals: true });
    if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
    if (values.limit !== undefined && !(/^[1-9]\d{0,3}$/.test(values.limit) && Number(values.limit) <= LIMIT_MAX)) {
      throw new UsageError(`--limit: expected an integer from 1 to ${LIMIT_MAX}: ${values.limit}`);
    }
    const client = ApiClient.fromFlags(values, 'tenant', io);
    const { state, destination, group, type, schedule, from, to, limit, cursor } = values;
    const response = await client.request('GET', '/v1/events', {
      query: { state, destination, group, type, schedule, from, to, limit, cursor },
    });
    if (values.json) return printJson(io, response.body);
    io.out(renderEventPage(response.body as EventPage));
  },
};
