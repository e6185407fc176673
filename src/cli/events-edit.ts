/**
 * `belfry events edit <id>` (PATCH /v1/events/{id}) and `belfry events replay <id>`
 * (POST /v1/events/{id}/replay), through the SDK's `events` calls.
 */
import type { EventPatch } from '@belfry/client';
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
import { renderEvent, type EventView } from './event-view.ts';
import { parseDelay, parseFireAt, parseHeaders, readPayload } from './events-schedule.ts';
import { ifMatchFlag } from './flags.ts';

const IF_MATCH_USAGE = `  --if-match <version>  only if the event is still at this version (as 'events get' shows; 3 or "3")`;

const editUsage = `Usage: belfry events edit <id> [options]

Changes a scheduled event (PATCH /v1/events/{id}): its fire time, destination, payload, headers
or type. What is not given stays. An event that already fired is a 409 naming its state.

Options:
  --fire-at <time>      fire at: RFC 3339 or epoch ms
  --delay <duration>    or fire this long from now: 250ms, 30s, 5m, 4h, 7d or ms
  --destination <d>     a registered destination name, or an http(s):// URL
  --payload <json>      the new payload, as JSON
  --payload-file <f>    or read it from a file ('-' for stdin)
  --header <k=v>        the headers sent with the delivery (repeatable; replaces them all)
  --type <t>            the kind of event
  --no-type             clear the type
${IF_MATCH_USAGE}
${commonUsage('BELFRY_API_KEY')}`;

const editOptions = {
  ...COMMON_OPTIONS,
  'fire-at': { type: 'string' },
  delay: { type: 'string' },
  destination: { type: 'string' },
  payload: { type: 'string' },
  'payload-file': { type: 'string' },
  header: { type: 'string', multiple: true },
  type: { type: 'string' },
  'no-type': { type: 'boolean' },
  'if-match': { type: 'string' },
} as const;

export interface EventEditFlags {
  'fire-at'?: string;
  delay?: string;
  destination?: string;
  payload?: string;
  'payload-file'?: string;
  header?: string[];
  type?: string;
  'no-type'?: boolean;
}

/** The PATCH body from the flags; throws UsageError on input the API would refuse, or on no change. */
export async function buildEventPatch(flags: EventEditFlags, io: Pick<Io, 'readFile'>): Promise<EventPatch> {
  const patch: Record<string, unknown> = {};
  if (flags['fire-at'] !== undefined && flags.delay !== undefined)
    throw new UsageError('give --fire-at or --delay, not both');
  if (flags['fire-at'] !== undefined) patch.fireAt = parseFireAt(flags['fire-at']);
  if (flags.delay !== undefined) patch.delay = parseDelay(flags.delay);
  if (flags.destination !== undefined)
    patch.destination = /^https?:\/\//i.test(flags.destination) ? { url: flags.destination } : flags.destination;
  const payload = await readPayload(flags, io);
  if (payload !== undefined) patch.payload = payload;
  if (flags.header !== undefined) patch.headers = parseHeaders(flags.header);
  if (flags.type !== undefined && flags['no-type']) throw new UsageError('give --type or --no-type, not both');
  if (flags.type !== undefined) patch.type = flags.type;
  if (flags['no-type']) patch.type = null;
  if (Object.keys(patch).length === 0)
    throw new UsageError(
      'nothing to change: give --fire-at, --delay, --destination, --payload, --payload-file, --header, --type or --no-type',
    );
  return patch as EventPatch;
}

export const eventsEdit: Command = {
  usage: editUsage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: editOptions, allowPositionals: true });
    const id = onePositional(positionals, 'id');
    const patch = await buildEventPatch(values, io);
    const ifMatch = ifMatchFlag(values['if-match']);
    const event = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.events.patch(id, patch, { ifMatch }));
    if (values.json) return printJson(io, event);
    io.out(renderEvent(event as EventView));
  },
};

const replayOptions = { ...COMMON_OPTIONS, 'if-match': { type: 'string' } } as const;

export const eventsReplay: Command = {
  usage: `Usage: belfry events replay <id> [options]

Delivers an archived or discarded event again (POST /v1/events/{id}/replay): same id, new
attempts, due now. Follow it with 'belfry events trace <id>'.

Options:
${IF_MATCH_USAGE}
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: replayOptions, allowPositionals: true });
    const id = onePositional(positionals, 'id');
    const ifMatch = ifMatchFlag(values['if-match']);
    const event = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.events.replay(id, { ifMatch }));
    if (values.json) return printJson(io, event);
    io.out(renderEvent(event as EventView));
  },
};
