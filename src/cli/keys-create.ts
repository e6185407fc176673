/** `belfry keys create <tenantId>`: POST /v1/tenants/{id}/keys (admin). */
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, commonUsage, onePositional, parseCommandLine, printJson, type Command } from './command.ts';
import { cell, renderFields, timeCell } from './table.ts';

const usage = `Usage: belfry keys create <tenantId> [options]

Creates an API key for a tenant (POST /v1/tenants/{id}/keys). Needs the admin key.
The key is shown once: Belfry stores only its hash.

Options:
${commonUsage('BELFRY_ADMIN_KEY')}`;

export const keysCreate: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const tenantId = onePositional(positionals, 'tenantId');
    const client = ApiClient.fromFlags(values, 'admin', io);
    const response = await client.request('POST', `/v1/tenants/${encodeURIComponent(tenantId)}/keys`, { body: {} });
    if (values.json) return printJson(io, response.body);
    const key = response.body as { id?: string; key?: string; prefix?: string; createdAt?: string | number };
    io.out(
      renderFields([
        ['key', cell(key.key)],
        ['id', cell(key.id)],
        ['prefix', cell(key.prefix)],
        ['created at', timeCell(key.createdAt)],
      ]),
    );
    // On stderr so that stdout stays only the key's fields; --json is the form for scripts.
    io.err('note: this key is shown once and cannot be read back; store it now (e.g. export BELFRY_API_KEY=...).');
  },
};
