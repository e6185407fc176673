/** `belfry account limits|rotate-secret`: the calling tenant's own limits and signing secret (its API key). */
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, commonUsage, parseCommandLine, printJson, type Command } from './command.ts';
import {
  noPositionals,
  printRotatedSecret,
  SECRET_ROTATE_OPTIONS,
  SECRET_ROTATE_OPTIONS_USAGE,
  secretRotateRequest,
} from './flags.ts';
import { cell, renderFields, renderTable, timeCell } from './table.ts';

export const accountLimits: Command = {
  usage: `Usage: belfry account limits [options]

Shows the limits in effect for the calling tenant (GET /v1/limits).

Options:
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    noPositionals(positionals);
    const limits = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.account.limits());
    if (values.json) return printJson(io, limits);
    io.out(
      renderTable(
        ['LIMIT', 'VALUE'],
        Object.entries(limits).map(([name, value]) => [name, cell(value)]),
      ),
    );
  },
};

const rotateOptions = { ...COMMON_OPTIONS, ...SECRET_ROTATE_OPTIONS } as const;

export const accountRotateSecret: Command = {
  usage: `Usage: belfry account rotate-secret [options]

Gives the calling tenant a new signing secret, for its deliveries to inline URLs, printed once
(POST /v1/signing-secret/rotate). The old one keeps signing beside it for the grace period.

Options:
${SECRET_ROTATE_OPTIONS_USAGE}
${commonUsage('BELFRY_API_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: rotateOptions, allowPositionals: true });
    noPositionals(positionals);
    const request = secretRotateRequest(values);
    const rotated = await ApiClient.fromFlags(values, 'tenant', io).call((b) => b.account.rotateSigningSecret(request));
    printRotatedSecret(io, values.json, rotated);
  },
};
