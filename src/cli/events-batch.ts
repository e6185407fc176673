/** `belfry events batch --file <f>`: POST /v1/events/batch, through the SDK's `events.batch`. */
import type { EventBatchResult, EventCreate } from '@belfry/client';
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, commonUsage, parseCommandLine, printJson, UsageError, type Command } from './command.ts';
import { parseJsonFlag } from './events-schedule.ts';
import { noPositionals } from './flags.ts';
import { cell, renderTable, timeCell } from './table.ts';

const usage = `Usage: belfry events batch --file <f> [options]

Schedules many events in one request (POST /v1/events/batch), up to the tenant's batchEventsMax.
The file holds a JSON array of event bodies, as for POST /v1/events, or {"events": [...]}. Give
each event an id to make running the file again harmless (the same id and body is 'existing').
Each event succeeds or fails alone: the exit code is 1 when any was refused.

Options:
  --file <f>            the events, as JSON ('-' for stdin)
${commonUsage('BELFRY_API_KEY')}`;

const options = { ...COMMON_OPTIONS, file: { type: 'string' } } as const;

/** One row per event, numbered as in the file; an event refused without an id of its own shows '-'. */
export function renderBatchResults(results: EventBatchResult[], ids: (string | undefined)[]): string {
  return renderTable(
    ['#', 'ID', 'RESULT', 'STATE', 'FIRE AT', 'ERROR'],
    results.map((r, i) => [
      String(i + 1),
      cell(r.event?.id ?? r.id ?? ids[i]),
      cell(r.status),
      cell(r.event?.state),
      timeCell(r.event?.fireAt),
      r.error ? `${r.error.code}: ${r.error.message}` : '-',
    ]),
  );
}

export const eventsBatch: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options, allowPositionals: true });
    noPositionals(positionals);
    if (values.file === undefined) throw new UsageError('--file is required: a JSON array of event bodies');
    let text: string;
    try {
      text = await io.readFile(values.file === '-' ? '/dev/stdin' : values.file);
    } catch (error) {
      throw new UsageError(`--file: cannot read ${values.file}: ${error instanceof Error ? error.message : error}`);
    }
    const parsed = parseJsonFlag('--file', text);
    const events = Array.isArray(parsed) ? parsed : (parsed as { events?: unknown } | null)?.events;
    if (!Array.isArray(events) || events.length === 0)
      throw new UsageError(
        `--file: expected a non-empty JSON array of events, or {"events": [...]}, in ${values.file}`,
      );
    const at = events.findIndex((e) => e === null || typeof e !== 'object' || Array.isArray(e));
    if (at >= 0) throw new UsageError(`--file: event ${at + 1} is not a JSON object`);
    // The SDK gives each event without an id one of its own, before sending.
    const bodies = events as EventCreate[];
    const results = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.events.batch(bodies));
    if (values.json) printJson(io, { results });
    else
      io.out(
        renderBatchResults(
          results,
          bodies.map((e) => e.id),
        ),
      );
    const refused = results.filter((r) => r.status === 'error').length;
    if (refused > 0) throw new Error(`${refused} of ${results.length} events refused (their errors are listed above)`);
    if (!values.json) {
      const created = results.filter((r) => r.status === 'created').length;
      io.out(`\n${created} created, ${results.length - created} already there`);
    }
  },
};
