/** `belfry tenants create <name>`: POST /v1/tenants (admin). */
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, commonUsage, onePositional, parseCommandLine, printJson, type Command } from './command.ts';
import { cell, renderFields, timeCell } from './table.ts';

const usage = `Usage: belfry tenants create <name> [options]

Creates a tenant (POST /v1/tenants). Needs the admin key. Prints its signing secret, which
signs its deliveries to inline URLs: shown once (rotate it with POST /v1/signing-secret/rotate).
Then give it an API key with: belfry keys create <tenant id>

Options:
${commonUsage('BELFRY_ADMIN_KEY')}`;

export const tenantsCreate: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const name = onePositional(positionals, 'name');
    const client = ApiClient.fromFlags(values, 'admin', io);
    const response = await client.request('POST', '/v1/tenants', { body: { name } });
    if (values.json) return printJson(io, response.body);
    const tenant = response.body as { id?: string; name?: string; createdAt?: string | number; signingSecret?: string };
    io.out(
      renderFields([
        ['id', cell(tenant.id)],
        ['name', cell(tenant.name)],
        ['created at', timeCell(tenant.createdAt)],
        ['signing secret', cell(tenant.signingSecret)],
      ]),
    );
    // On stderr so that stdout stays only the tenant's fields; --json is the form for scripts.
    io.err(
      'note: the signing secret is shown once and cannot be read back; give it to the receivers of inline-URL deliveries now.',
    );
  },
};
