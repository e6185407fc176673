/**
 * `belfry destinations list|get|put|delete|rotate-secret|health`: the tenant's registered
 * destinations (/v1/destinations), through the SDK's `destinations` calls.
 */
import type { Destination, DestinationHealth, DestinationPut } from '@belfry/client';
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
import { parseHeaders } from './events-schedule.ts';
import {
  durationFlag,
  intFlag,
  listFlag,
  noPositionals,
  numberFlag,
  printRotatedSecret,
  readJsonObjectFile,
  SECRET_ROTATE_OPTIONS,
  SECRET_ROTATE_OPTIONS_USAGE,
  SECRET_SHOWN_ONCE,
  secretRotateRequest,
} from './flags.ts';
import { cell, msCell, renderFields, renderTable, timeCell } from './table.ts';

const KINDS = ['http', 'pull', 'kafka', 'nats', 'amqp', 'redis'];

/** Where a destination sends, in one cell: its URL, or its brokers and topic, subject, exchange or stream. */
export function targetCell(d: Partial<Destination>): string {
  switch (d.kind) {
    case 'pull':
      return 'claimed by consumers';
    case 'kafka':
      return `${(d.brokers ?? []).join(',')} topic ${cell(d.topic)}`;
    case 'nats':
      return `${(d.servers ?? []).join(',')} subject ${cell(d.subject)}`;
    case 'amqp':
      return `${cell(d.url)} exchange ${JSON.stringify(d.exchange ?? '')}${d.routingKey ? ` key ${d.routingKey}` : ''}`;
    case 'redis':
      return `${cell(d.url)} stream ${cell(d.stream)}`;
    default:
      return cell(d.url);
  }
}

function retryCell(retry: Destination['retry'] | undefined): string {
  if (!retry) return '-';
  return `${retry.maxAttempts} attempts, backoff ${retry.minBackoff} to ${retry.maxBackoff} x${retry.coefficient}`;
}

export function renderDestination(d: Destination): string {
  const fields: Array<[string, string]> = [
    ['name', cell(d.name)],
    ['kind', cell(d.kind)],
    ['target', targetCell(d)],
  ];
  if (d.sasl) fields.push(['sasl', `${d.sasl.mechanism} as ${d.sasl.username}`]);
  if (d.ssl !== undefined) fields.push(['ssl', cell(d.ssl)]);
  if (d.allowInsecureCredentials) fields.push(['insecure credentials', 'allowed']);
  fields.push(
    ['headers', cell(d.headers && Object.keys(d.headers).length > 0 ? d.headers : undefined)],
    ['timeout', cell(d.timeout)],
    ['retry', retryCell(d.retry)],
    ['rate limit', d.rateLimit ? `${d.rateLimit.perSecond}/s` : '-'],
    ['max concurrency', cell(d.maxConcurrency)],
    ['created at', timeCell(d.createdAt)],
    ['updated at', timeCell(d.updatedAt)],
  );
  if (d.secret) fields.push(['secret', d.secret]);
  return renderFields(fields);
}

export function renderDestinationList(destinations: Destination[]): string {
  if (destinations.length === 0) return 'no destinations';
  return renderTable(
    ['NAME', 'KIND', 'TARGET', 'TIMEOUT', 'MAX CONCURRENCY', 'UPDATED'],
    destinations.map((d) => [
      cell(d.name),
      cell(d.kind),
      targetCell(d),
      cell(d.timeout),
      cell(d.maxConcurrency),
      timeCell(d.updatedAt),
    ]),
  );
}

export const destinationsList: Command = {
  usage: `Usage: belfry destinations list [options]

Lists the tenant's destinations by name (GET /v1/destinations).

Options:
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    noPositionals(positionals);
    const destinations = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.destinations.list());
    if (values.json) return printJson(io, { destinations });
    io.out(renderDestinationList(destinations));
  },
};

export const destinationsGet: Command = {
  usage: `Usage: belfry destinations get <name> [options]

Shows a destination: its kind and target, headers, timeout, retry policy and limits
(GET /v1/destinations/{name}). Secrets are never shown.

Options:
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const name = onePositional(positionals, 'name');
    const destination = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.destinations.get(name));
    if (values.json) return printJson(io, destination);
    io.out(renderDestination(destination));
  },
};

const putOptions = {
  ...COMMON_OPTIONS,
  file: { type: 'string' },
  kind: { type: 'string' },
  'target-url': { type: 'string' },
  secret: { type: 'string' },
  brokers: { type: 'string' },
  topic: { type: 'string' },
  servers: { type: 'string' },
  subject: { type: 'string' },
  exchange: { type: 'string' },
  'routing-key': { type: 'string' },
  stream: { type: 'string' },
  'max-len': { type: 'string' },
  ssl: { type: 'boolean' },
  'allow-insecure-credentials': { type: 'boolean' },
  header: { type: 'string', multiple: true },
  timeout: { type: 'string' },
  'max-attempts': { type: 'string' },
  'min-backoff': { type: 'string' },
  'max-backoff': { type: 'string' },
  'backoff-coefficient': { type: 'string' },
  'rate-limit': { type: 'string' },
  'max-concurrency': { type: 'string' },
} as const;

/** The body flags of `put`: every option but --file and the common ones. */
const BODY_FLAGS = Object.keys(putOptions).filter((k) => !(k in COMMON_OPTIONS) && k !== 'file');

export interface DestinationFlags {
  file?: string;
  kind?: string;
  'target-url'?: string;
  secret?: string;
  brokers?: string;
  topic?: string;
  servers?: string;
  subject?: string;
  exchange?: string;
  'routing-key'?: string;
  stream?: string;
  'max-len'?: string;
  ssl?: boolean;
  'allow-insecure-credentials'?: boolean;
  header?: string[];
  timeout?: string;
  'max-attempts'?: string;
  'min-backoff'?: string;
  'max-backoff'?: string;
  'backoff-coefficient'?: string;
  'rate-limit'?: string;
  'max-concurrency'?: string;
}

/**
 * The PUT body from the flags, or from --file; the API checks the fields of the kind (a 400 names
 * each one it refuses).
 */
export async function buildDestinationBody(flags: DestinationFlags, io: Pick<Io, 'readFile'>): Promise<DestinationPut> {
  const given = BODY_FLAGS.filter((k) => flags[k as keyof DestinationFlags] !== undefined);
  if (flags.file !== undefined) {
    if (given.length > 0) throw new UsageError(`give --file or the destination's flags, not both (--${given[0]})`);
    return (await readJsonObjectFile('--file', flags.file, io)) as DestinationPut;
  }
  const kind = flags.kind ?? 'http';
  if (!KINDS.includes(kind)) throw new UsageError(`--kind: expected one of ${KINDS.join(', ')}: ${kind}`);
  const body: Record<string, unknown> = { kind };
  if (flags['target-url'] !== undefined) body.url = flags['target-url'];
  if ((kind === 'http' || kind === 'amqp' || kind === 'redis') && body.url === undefined)
    throw new UsageError(
      `--target-url <url> is required for a destination of kind ${kind} (or give the body with --file)`,
    );
  if (flags.secret !== undefined) body.secret = flags.secret;
  if (flags.brokers !== undefined) body.brokers = listFlag(flags.brokers);
  if (flags.topic !== undefined) body.topic = flags.topic;
  if (flags.servers !== undefined) body.servers = listFlag(flags.servers);
  if (flags.subject !== undefined) body.subject = flags.subject;
  if (flags.exchange !== undefined) body.exchange = flags.exchange;
  if (flags['routing-key'] !== undefined) body.routingKey = flags['routing-key'];
  if (flags.stream !== undefined) body.stream = flags.stream;
  if (flags['max-len'] !== undefined) body.maxLen = intFlag('--max-len', flags['max-len'], 1, 1_000_000_000);
  if (flags.ssl) body.ssl = true;
  if (flags['allow-insecure-credentials']) body.allowInsecureCredentials = true;
  if (flags.header !== undefined) body.headers = parseHeaders(flags.header);
  if (flags.timeout !== undefined) body.timeout = durationFlag('--timeout', flags.timeout);
  const retry: Record<string, unknown> = {};
  if (flags['max-attempts'] !== undefined) retry.maxAttempts = intFlag('--max-attempts', flags['max-attempts'], 1, 100);
  if (flags['min-backoff'] !== undefined) retry.minBackoff = durationFlag('--min-backoff', flags['min-backoff']);
  if (flags['max-backoff'] !== undefined) retry.maxBackoff = durationFlag('--max-backoff', flags['max-backoff']);
  if (flags['backoff-coefficient'] !== undefined)
    retry.coefficient = numberFlag('--backoff-coefficient', flags['backoff-coefficient']);
  if (Object.keys(retry).length > 0) body.retry = retry;
  if (flags['rate-limit'] !== undefined)
    body.rateLimit = { perSecond: numberFlag('--rate-limit', flags['rate-limit']) };
  if (flags['max-concurrency'] !== undefined)
    body.maxConcurrency = intFlag('--max-concurrency', flags['max-concurrency'], 1, 1000);
  return body as DestinationPut;
}

export const destinationsPut: Command = {
  usage: `Usage: belfry destinations put <name> (--target-url <url> | --kind <kind> ... | --file <f>) [options]

Creates or replaces a destination (PUT /v1/destinations/{name}). A webhook made without --secret
gets a generated one, printed once: its receivers verify signatures with it.

Options:
  --file <f>            the whole JSON body from a file ('-' for stdin), instead of the flags below
  --kind <kind>         http (default), pull, kafka, nats, amqp or redis
  --target-url <url>    http: the webhook URL; amqp: amqp://...; redis: redis://...
  --secret <whsec_...>  http: the signing secret (generated when left out)
  --brokers <h:p,...>   kafka: the brokers
  --topic <t>           kafka: the topic
  --servers <u,...>     nats: the servers
  --subject <s>         nats: the JetStream subject
  --exchange <x>        amqp: the exchange ("" for the default one)
  --routing-key <k>     amqp: the routing key
  --stream <key>        redis: the stream key
  --max-len <n>         redis: an approximate cap on the stream's length
  --ssl                 kafka: connect with TLS
  --allow-insecure-credentials  send credentials without TLS (refused otherwise)
  --header <k=v>        a header sent with every delivery (repeatable)
  --timeout <dur>       per attempt (default 10s)
  --max-attempts <n>    retry policy: attempts (1-100)
  --min-backoff <dur>   retry policy: the first wait
  --max-backoff <dur>   retry policy: the longest wait
  --backoff-coefficient <x>  retry policy: each wait this many times the last
  --rate-limit <n>      at most n deliveries per second
  --max-concurrency <n> at most n deliveries at once (1-1000, default 20)
  (SASL credentials: give them in --file, so they are not on the command line)
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: putOptions, allowPositionals: true });
    const name = onePositional(positionals, 'name');
    const body = await buildDestinationBody(values, io);
    const destination = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.destinations.put(name, body));
    if (values.json) return printJson(io, destination);
    io.out(renderDestination(destination));
    if (destination.secret) io.err(SECRET_SHOWN_ONCE);
  },
};

export const destinationsDelete: Command = {
  usage: `Usage: belfry destinations delete <name> [options]

Deletes a destination (DELETE /v1/destinations/{name}). Prints nothing with --json (the API
answers 204): the exit code says it.

Options:
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const name = onePositional(positionals, 'name');
    await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.destinations.delete(name));
    if (!values.json) io.out(`deleted destination ${name}`);
  },
};

const rotateOptions = { ...COMMON_OPTIONS, ...SECRET_ROTATE_OPTIONS } as const;

export const destinationsRotateSecret: Command = {
  usage: `Usage: belfry destinations rotate-secret <name> [options]

Gives a destination a new signing secret, printed once (POST /v1/destinations/{name}/rotate-secret).
The old one keeps signing beside it for the grace period, so receivers can switch without a gap.

Options:
${SECRET_ROTATE_OPTIONS_USAGE}
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: rotateOptions, allowPositionals: true });
    const name = onePositional(positionals, 'name');
    const request = secretRotateRequest(values);
    const rotated = await ApiClient.fromFlags(values, 'tenant', io).call((b) =>
      b.destinations.rotateSecret(name, request),
    );
    printRotatedSecret(io, values.json, rotated);
  },
};

export function renderHealth(h: DestinationHealth): string {
  const fields: Array<[string, string]> = [
    ['name', cell(h.name)],
    ['answered by', cell(h.nodeId)],
  ];
  const q = h.queue;
  if (!q) {
    fields.push(['queue', 'none: this node has delivered nothing to it since it started']);
    return renderFields(fields);
  }
  fields.push(
    ['circuit', cell(q.circuit)],
    ['waiting', cell(q.waiting)],
    ['in flight', cell(q.inFlight)],
    ['claimed', cell(q.claimed)],
    ['recent attempts', cell(q.deliveries)],
    ['success rate', q.successRate === null ? '-' : `${(q.successRate * 100).toFixed(1)}%`],
    ['p99 duration', msCell(q.p99DurationMs)],
  );
  return renderFields(fields);
}

export const destinationsHealth: Command = {
  usage: `Usage: belfry destinations health <name> [options]

Shows a destination's queue on the node that answers: its circuit, waiting and in-flight
deliveries, and the recent success rate and p99 duration (GET /v1/destinations/{name}/health).

Options:
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const name = onePositional(positionals, 'name');
    const health = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.destinations.health(name));
    if (values.json) return printJson(io, health);
    io.out(renderHealth(health));
  },
};
