/** `belfry events trace <id>`: GET /v1/events/{id}/transitions, the execution trace. */
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, commonUsage, onePositional, parseCommandLine, printJson, type Command } from './command.ts';
import { cell, msCell, renderTable, timeCell } from './table.ts';

const usage = `Usage: belfry events trace <id> [options]

Shows every step an event took: each state change, attempt, response and edit
(GET /v1/events/{id}/transitions).

Options:
${commonUsage('BELFRY_API_KEY')}`;

interface Transition {
  seq?: number;
  at?: string | number;
  kind?: string;
  fromState?: string | null;
  toState?: string | null;
  attempt?: number | null;
  status?: number | null;
  error?: string | null;
  durationMs?: number | null;
  latenessMs?: number | null;
  detail?: unknown;
}

function stateChange(t: Transition): string {
  if (!t.fromState && !t.toState) return '-';
  if (t.fromState === t.toState || !t.fromState) return cell(t.toState);
  return `${t.fromState} -> ${cell(t.toState)}`;
}

/** Renders the transitions as a table; the last column holds the error, or else the detail. */
export function renderTransitions(transitions: Transition[]): string {
  if (transitions.length === 0) return 'no transitions';
  const rows = transitions.map((t) => [
    cell(t.seq),
    timeCell(t.at),
    cell(t.kind),
    stateChange(t),
    cell(t.attempt),
    cell(t.status),
    msCell(t.durationMs),
    msCell(t.latenessMs),
    cell(t.error ?? t.detail),
  ]);
  return renderTable(['SEQ', 'AT', 'KIND', 'STATE', 'ATTEMPT', 'STATUS', 'DURATION', 'LATENESS', 'ERROR/DETAIL'], rows);
}

export const eventsTrace: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const id = onePositional(positionals, 'id');
    const client = ApiClient.fromFlags(values, 'tenant', io);
    const response = await client.request('GET', `/v1/events/${encodeURIComponent(id)}/transitions`);
    if (values.json) return printJson(io, response.body);
    io.out(renderTransitions((response.body as { transitions?: Transition[] }).transitions ?? []));
  },
};
