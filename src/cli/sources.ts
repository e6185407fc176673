/**
 * `belfry sources list|get|put|delete`: the tenant's Kafka sources, schedule requests read from a
 * topic (/v1/sources), through the SDK's `sources` calls.
 */
import type { Source, SourcePut } from '@belfry/client';
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
import { listFlag, noPositionals, readJsonObjectFile } from './flags.ts';
import { cell, renderFields, renderTable, timeCell } from './table.ts';

export function renderSource(s: Source): string {
  const fields: Array<[string, string]> = [
    ['name', cell(s.name)],
    ['kind', cell(s.kind)],
    ['brokers', s.brokers.join(',')],
    ['topic', cell(s.topic)],
    ['group id', cell(s.groupId)],
    ['dead-letter topic', cell(s.deadLetterTopic)],
    ['start', cell(s.start)],
    ['ssl', cell(s.ssl)],
    ['sasl', s.sasl ? `${s.sasl.mechanism} as ${s.sasl.username}` : '-'],
  ];
  if (s.allowInsecureCredentials) fields.push(['insecure credentials', 'allowed']);
  fields.push(
    ['state', cell(s.state)],
    ['lag', cell(s.lag)],
    ['accepted', cell(s.accepted)],
    ['rejected', cell(s.rejected)],
    ['version', cell(s.version)],
    ['created at', timeCell(s.createdAt)],
    ['updated at', timeCell(s.updatedAt)],
  );
  if (s.lastErrors.length === 0) fields.push(['last errors', '-']);
  for (const [i, e] of s.lastErrors.entries())
    fields.push([i === 0 ? 'last errors' : '', `${timeCell(e.at)}  ${e.message}`]);
  return renderFields(fields);
}

export const sourcesGet: Command = {
  usage: `Usage: belfry sources get <name> [options]

Shows a source with its state, lag, messages accepted and rejected, and last errors
(GET /v1/sources/{name}). SASL passwords are never shown.

Options:
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const name = onePositional(positionals, 'name');
    const source = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.sources.get(name));
    if (values.json) return printJson(io, source);
    io.out(renderSource(source));
  },
};

const listOptions = { ...COMMON_OPTIONS, limit: { type: 'string' }, cursor: { type: 'string' } } as const;

export const sourcesList: Command = {
  usage: `Usage: belfry sources list [options]

Lists the tenant's sources by name, with their state and lag (GET /v1/sources).

Options:
  --limit <n>           1-1000 (default 100)
  --cursor <name>       the page after this cursor (printed at the end of the previous page)
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: listOptions, allowPositionals: true });
    noPositionals(positionals);
    if (values.limit !== undefined && !/^([1-9]\d{0,2}|1000)$/.test(values.limit))
      throw new UsageError(`--limit: expected an integer from 1 to 1000: ${values.limit}`);
    const { limit, cursor } = values;
    const page = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.sources.listPage({ limit, cursor }));
    if (values.json) return printJson(io, page);
    if (page.sources.length === 0) io.out('no sources');
    else
      io.out(
        renderTable(
          ['NAME', 'TOPIC', 'STATE', 'LAG', 'ACCEPTED', 'REJECTED', 'UPDATED'],
          page.sources.map((s) => [
            cell(s.name),
            cell(s.topic),
            cell(s.state),
            cell(s.lag),
            cell(s.accepted),
            cell(s.rejected),
            timeCell(s.updatedAt),
          ]),
        ),
      );
    if (page.nextCursor) io.out(`\nmore: --cursor ${page.nextCursor}`);
  },
};

const putOptions = {
  ...COMMON_OPTIONS,
  file: { type: 'string' },
  brokers: { type: 'string' },
  topic: { type: 'string' },
  'group-id': { type: 'string' },
  'dead-letter-topic': { type: 'string' },
  start: { type: 'string' },
  ssl: { type: 'boolean' },
} as const;

export interface SourceFlags {
  file?: string;
  brokers?: string;
  topic?: string;
  'group-id'?: string;
  'dead-letter-topic'?: string;
  start?: string;
  ssl?: boolean;
}

/** The PUT body from the flags, or from --file (the form for SASL credentials). */
export async function buildSourceBody(flags: SourceFlags, io: Pick<Io, 'readFile'>): Promise<SourcePut> {
  const given = (['brokers', 'topic', 'group-id', 'dead-letter-topic', 'start', 'ssl'] as const).filter(
    (k) => flags[k] !== undefined,
  );
  if (flags.file !== undefined) {
    if (given.length > 0) throw new UsageError(`give --file or the source's flags, not both (--${given[0]})`);
    const body = await readJsonObjectFile('--file', flags.file, io);
    return { kind: 'kafka', ...body } as SourcePut;
  }
  if (flags.brokers === undefined || flags.topic === undefined)
    throw new UsageError('give --brokers and --topic (or the whole body with --file)');
  if (flags.start !== undefined && flags.start !== 'earliest' && flags.start !== 'latest')
    throw new UsageError(`--start: expected earliest or latest: ${flags.start}`);
  const body: SourcePut = { kind: 'kafka', brokers: listFlag(flags.brokers), topic: flags.topic };
  if (flags['group-id'] !== undefined) body.groupId = flags['group-id'];
  if (flags['dead-letter-topic'] !== undefined) body.deadLetterTopic = flags['dead-letter-topic'];
  if (flags.start !== undefined) body.start = flags.start as 'earliest' | 'latest';
  if (flags.ssl) body.ssl = true;
  return body;
}

export const sourcesPut: Command = {
  usage: `Usage: belfry sources put <name> (--brokers <h:p,...> --topic <t> | --file <f>) [options]

Creates or replaces a Kafka source (PUT /v1/sources/{name}): the nodes read schedule requests
from its topic, each message an event body as for POST /v1/events.

Options:
  --brokers <h:p,...>   the Kafka brokers
  --topic <t>           the topic the schedule requests are read from
  --group-id <g>        the consumer group (default: the source's own)
  --dead-letter-topic <t>  where invalid messages go (left out: counted and skipped)
  --start <s>           where a new consumer group starts: earliest (default) or latest
  --ssl                 connect with TLS
  --file <f>            the whole JSON body from a file ('-' for stdin), instead of the flags:
                        the form for SASL credentials, so no password is on the command line
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: putOptions, allowPositionals: true });
    const name = onePositional(positionals, 'name');
    const body = await buildSourceBody(values, io);
    const source = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.sources.put(name, body));
    if (values.json) return printJson(io, source);
    io.out(renderSource(source));
  },
};

export const sourcesDelete: Command = {
  usage: `Usage: belfry sources delete <name> [options]

Deletes a source: the nodes stop reading it (DELETE /v1/sources/{name}). Prints the source as it was.

Options:
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const name = onePositional(positionals, 'name');
    const source = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.sources.delete(name));
    if (values.json) return printJson(io, source);
    io.out(`deleted source ${name}`);
    io.out(renderSource(source));
  },
};
