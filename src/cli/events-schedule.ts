/** `belfry events schedule`: POST /v1/events. */
import { parseDurationMs, parseTimeMs } from '../core/duration.ts';
import { ApiClient } from './client.ts';
import {
  COMMON_OPTIONS,
  commonUsage,
  parseCommandLine,
  printJson,
  UsageError,
  type Command,
  type Io,
} from './command.ts';
import { renderEvent, type EventView } from './event-view.ts';

const usage = `Usage: belfry events schedule --destination <name|url> [options]

Schedules one event (POST /v1/events). Sending the same --id and body again is harmless.

Options:
  --destination <d>     a registered destination name, or an http(s):// URL
  --fire-at <time>      when to fire: RFC 3339 (2026-11-22T10:21:55Z) or epoch ms
  --delay <duration>    or fire after a delay: 250ms, 30s, 5m, 4h, 7d or ms
  --payload <json>      the payload, as JSON
  --payload-file <f>    or read the JSON payload from a file ('-' for stdin)
  --id <id>             the event id (unique per tenant; made by Belfry if left out)
  --group <g>           events of one group are delivered in order, one at a time
  --type <t>            the kind of event (order.timeout): a list filter, sent as belfry-type
  --header <k=v>        a header sent with the delivery (repeatable)
${commonUsage('BELFRY_API_KEY')}`;

const options = {
  ...COMMON_OPTIONS,
  destination: { type: 'string' },
  'fire-at': { type: 'string' },
  delay: { type: 'string' },
  payload: { type: 'string' },
  'payload-file': { type: 'string' },
  id: { type: 'string' },
  group: { type: 'string' },
  type: { type: 'string' },
  header: { type: 'string', multiple: true },
} as const;

/** The flags that shape the request body, after parsing. */
export interface ScheduleFlags {
  destination?: string;
  'fire-at'?: string;
  delay?: string;
  payload?: string;
  'payload-file'?: string;
  id?: string;
  group?: string;
  type?: string;
  header?: string[];
}

/** Builds the POST /v1/events body from the flags; throws UsageError on input the API would refuse. */
export async function buildScheduleBody(
  flags: ScheduleFlags,
  io: Pick<Io, 'readFile'>,
): Promise<Record<string, unknown>> {
  if (!flags.destination) throw new UsageError('--destination is required');
  const body: Record<string, unknown> = {};
  if (flags.id !== undefined) body.id = flags.id;
  body.destination = /^https?:\/\//i.test(flags.destination) ? { url: flags.destination } : flags.destination;
  if (flags['fire-at'] !== undefined && flags.delay !== undefined)
    throw new UsageError('give --fire-at or --delay, not both');
  if (flags['fire-at'] !== undefined) body.fireAt = parseFireAt(flags['fire-at']);
  if (flags.delay !== undefined) body.delay = parseDelay(flags.delay);
  const payload = await readPayload(flags, io);
  if (payload !== undefined) body.payload = payload;
  if (flags.group !== undefined) body.group = flags.group;
  if (flags.type !== undefined) body.type = flags.type;
  if (flags.header !== undefined) body.headers = parseHeaders(flags.header);
  return body;
}

export function parseFireAt(text: string): string | number {
  const value = /^\d+$/.test(text) ? Number(text) : text;
  if (parseTimeMs(value) === null)
    throw new UsageError(`--fire-at: not an RFC 3339 time or epoch milliseconds: ${text}`);
  return value;
}

export function parseDelay(text: string): string | number {
  const value = /^\d+$/.test(text) ? Number(text) : text;
  if (parseDurationMs(value) === null)
    throw new UsageError(`--delay: not a duration (250ms, 30s, 5m, 4h, 7d): ${text}`);
  return value;
}

export async function readPayload(flags: ScheduleFlags, io: Pick<Io, 'readFile'>): Promise<unknown> {
  if (flags.payload !== undefined && flags['payload-file'] !== undefined) {
    throw new UsageError('give --payload or --payload-file, not both');
  }
  if (flags.payload !== undefined) return parseJsonFlag('--payload', flags.payload);
  const path = flags['payload-file'];
  if (path === undefined) return undefined;
  let text: string;
  try {
    text = await io.readFile(path === '-' ? '/dev/stdin' : path);
  } catch (error) {
    throw new UsageError(`--payload-file: cannot read ${path}: ${error instanceof Error ? error.message : error}`);
  }
  return parseJsonFlag('--payload-file', text);
}

export function parseJsonFlag(flag: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${flag}: not valid JSON: ${error instanceof Error ? error.message : error}`);
  }
}

export function parseHeaders(pairs: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`--header: expected name=value: ${pair}`);
    headers[pair.slice(0, at).trim()] = pair.slice(at + 1);
  }
  return headers;
}

export const eventsSchedule: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options, allowPositionals: true });
    if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
    const body = await buildScheduleBody(values, io);
    const client = ApiClient.fromFlags(values, 'tenant', io);
    const response = await client.request('POST', '/v1/events', { body });
    if (values.json) return printJson(io, response.body);
    // 200 rather than 201: this id and body were already stored, and nothing new was scheduled.
    io.out(response.status === 200 ? 'already scheduled (same id and body)' : 'scheduled');
    io.out(renderEvent(response.body as EventView));
  },
};
