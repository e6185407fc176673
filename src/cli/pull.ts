/**
 * `belfry pull claim|ack|nack|extend`: pull delivery by hand (docs/pull.md), through the SDK's
 * `pull` calls. A program consumes with the SDK's consumer; these are for looking and fixing.
 */
import type { ClaimedEvent, PullClaimRequest, PullNack } from '@belfry/client';
import { ApiClient } from './client.ts';
import {
  COMMON_OPTIONS,
  commonUsage,
  onePositional,
  parseCommandLine,
  printJson,
  UsageError,
  type Command,
} from './command.ts';
import { renderEvent, type EventView } from './event-view.ts';
import { durationFlag, intFlag } from './flags.ts';
import { cell, renderFields, renderTable, timeCell } from './table.ts';

export function renderClaimed(events: ClaimedEvent[]): string {
  if (events.length === 0) return 'no events due';
  return renderTable(
    ['ID', 'TYPE', 'ATTEMPT', 'FIRE AT', 'VISIBLE UNTIL', 'RECEIPT', 'PAYLOAD'],
    events.map((e) => [
      cell(e.id),
      cell(e.type),
      cell(e.attempt),
      timeCell(e.fireAt),
      timeCell(e.visibleUntil),
      cell(e.receipt),
      cell(e.payload),
    ]),
    // A receipt is used whole: never cut it.
    { cellWidthMax: 400 },
  );
}

const claimOptions = {
  ...COMMON_OPTIONS,
  max: { type: 'string' },
  'visibility-timeout': { type: 'string' },
  wait: { type: 'string' },
  type: { type: 'string', multiple: true },
} as const;

export const pullClaim: Command = {
  usage: `Usage: belfry pull claim <destination> [options]

Claims due events of a pull destination (POST /v1/destinations/{name}/claim): each is yours until
its visibility timeout ends. Settle each with 'belfry pull ack|nack <id> --receipt <r>', or it is
retried once the timeout ends.

Options:
  --max <n>             events to claim at most (1-100, default 10)
  --visibility-timeout <dur>  how long a claim holds (default the destination's)
  --wait <dur>          long-poll up to this long when none is due (default 0)
  --type <t>            only events of this type (repeatable)
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: claimOptions, allowPositionals: true });
    const destination = onePositional(positionals, 'destination');
    const request: PullClaimRequest = {};
    if (values.max !== undefined) request.max = intFlag('--max', values.max, 1, 100);
    if (values['visibility-timeout'] !== undefined)
      request.visibilityTimeout = durationFlag('--visibility-timeout', values['visibility-timeout']);
    if (values.wait !== undefined) request.wait = durationFlag('--wait', values.wait);
    if (values.type !== undefined) request.types = values.type;
    const events = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.pull.claim(destination, request));
    if (values.json) return printJson(io, { events });
    io.out(renderClaimed(events));
  },
};

const receiptUsage = "  --receipt <r>         the receipt of the claim (required; from 'pull claim')";

function requireReceipt(receipt: string | undefined): string {
  if (receipt === undefined || receipt === '')
    throw new UsageError("--receipt is required: the receipt 'pull claim' printed");
  return receipt;
}

export const pullAck: Command = {
  usage: `Usage: belfry pull ack <id> --receipt <r> [options]

Settles a claimed event as succeeded (POST /v1/events/{id}/ack). A 409 says the claim is no longer
held (its visibility timeout ended).

Options:
${receiptUsage}
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({
      args: argv,
      options: { ...COMMON_OPTIONS, receipt: { type: 'string' } },
      allowPositionals: true,
    });
    const id = onePositional(positionals, 'id');
    const receipt = requireReceipt(values.receipt);
    const event = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.pull.ack(id, receipt));
    if (values.json) return printJson(io, event);
    io.out(renderEvent(event as EventView));
  },
};

const nackOptions = {
  ...COMMON_OPTIONS,
  receipt: { type: 'string' },
  'retry-after': { type: 'string' },
  discard: { type: 'boolean' },
  reason: { type: 'string' },
} as const;

export const pullNack: Command = {
  usage: `Usage: belfry pull nack <id> --receipt <r> [options]

Settles a claimed event as failed (POST /v1/events/{id}/nack): retried after --retry-after or its
backoff, or, with --discard, discarded.

Options:
${receiptUsage}
  --retry-after <dur>   retry after this long (default: the event's backoff)
  --discard             discard it: never retried
  --reason <text>       recorded as the event's last error
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: nackOptions, allowPositionals: true });
    const id = onePositional(positionals, 'id');
    const request: PullNack = { receipt: requireReceipt(values.receipt) };
    if (values['retry-after'] !== undefined && values.discard)
      throw new UsageError('give --retry-after or --discard, not both');
    if (values['retry-after'] !== undefined) request.retryAfter = durationFlag('--retry-after', values['retry-after']);
    if (values.discard) request.discard = true;
    if (values.reason !== undefined) request.reason = values.reason;
    const event = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.pull.nack(id, request));
    if (values.json) return printJson(io, event);
    io.out(renderEvent(event as EventView));
  },
};

const extendOptions = {
  ...COMMON_OPTIONS,
  receipt: { type: 'string' },
  'visibility-timeout': { type: 'string' },
} as const;

export const pullExtend: Command = {
  usage: `Usage: belfry pull extend <id> --receipt <r> --visibility-timeout <dur> [options]

Keeps a claim longer: it now ends this long from now (POST /v1/events/{id}/extend).

Options:
${receiptUsage}
  --visibility-timeout <dur>  the new timeout, from now (required)
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: extendOptions, allowPositionals: true });
    const id = onePositional(positionals, 'id');
    const receipt = requireReceipt(values.receipt);
    if (values['visibility-timeout'] === undefined) throw new UsageError('--visibility-timeout is required');
    const visibilityTimeout = durationFlag('--visibility-timeout', values['visibility-timeout']);
    const extended = await ApiClient.fromFlags(values, 'tenant', io).call((b) =>
      b.pull.extend(id, { receipt, visibilityTimeout }),
    );
    if (values.json) return printJson(io, extended);
    io.out(
      renderFields([
        ['id', cell(extended.id)],
        ['visible until', timeCell(extended.visibleUntil)],
      ]),
    );
  },
};
