/**
 * `belfry keys create [<tenantId>]`: POST /v1/tenants/{id}/keys with the admin key, or, without a
 * tenant id, POST /v1/keys: a new key of the calling tenant (its API key).
 */
import type { ApiKeyCreated } from '@belfry/client';
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, parseCommandLine, printJson, UsageError, type Command } from './command.ts';
import { EITHER_KEY_USAGE } from './flags.ts';
import { cell, renderFields, timeCell } from './table.ts';

const usage = `Usage: belfry keys create [<tenantId>] [options]

Creates an API key: for a tenant with the admin key (POST /v1/tenants/{id}/keys), or without
<tenantId> one more key of the calling tenant (POST /v1/keys). The key is shown once: Belfry
stores only its hash.

Options:
${EITHER_KEY_USAGE}`;

/** `[<tenantId>] <name>` or `[<tenantId>]`: the tenant id when the command acts as the admin. */
export function tenantPositionals(
  positionals: string[],
  names: string[],
): { tenantId: string | undefined; rest: string[] } {
  if (positionals.length < names.length) throw new UsageError(`missing <${names[positionals.length]}>`);
  if (positionals.length > names.length + 1)
    throw new UsageError(`unexpected argument: ${positionals[names.length + 1]}`);
  for (const p of positionals) if (p === '') throw new UsageError('arguments must not be empty');
  const admin = positionals.length > names.length;
  return { tenantId: admin ? positionals[0] : undefined, rest: admin ? positionals.slice(1) : positionals };
}

export function renderCreatedKey(key: Partial<ApiKeyCreated> & { replaces?: string; replacedKeyRevokedAt?: string }) {
  const fields: Array<[string, string]> = [
    ['key', cell(key.key)],
    ['id', cell(key.id)],
    ['prefix', cell(key.prefix)],
    ['created at', timeCell(key.createdAt)],
  ];
  if (key.replaces !== undefined) fields.push(['replaces', cell(key.replaces)]);
  if (key.replacedKeyRevokedAt !== undefined) fields.push(['old key stops at', timeCell(key.replacedKeyRevokedAt)]);
  return renderFields(fields);
}

/** On stderr so that stdout stays only the key's fields; --json is the form for scripts. */
export const KEY_SHOWN_ONCE =
  'note: this key is shown once and cannot be read back; store it now (e.g. export BELFRY_API_KEY=...).';

export const keysCreate: Command = {
  usage,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const { tenantId } = tenantPositionals(positionals, []);
    const client = ApiClient.fromFlags(values, tenantId === undefined ? 'tenant' : 'admin', io);
    const key = await client.call((b) =>
      tenantId === undefined ? b.account.createKey() : b.tenants.createKey(tenantId),
    );
    if (values.json) return printJson(io, key);
    io.out(renderCreatedKey(key));
    io.err(KEY_SHOWN_ONCE);
  },
};
