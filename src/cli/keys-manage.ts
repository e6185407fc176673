/**
 * `belfry keys list|revoke|rotate`: a tenant's API keys with the admin key and a tenant id
 * (/v1/tenants/{id}/keys), or the calling tenant's own without one (/v1/keys).
 */
import type { ApiKeyList } from '@belfry/client';
import { ApiClient } from './client.ts';
import { COMMON_OPTIONS, parseCommandLine, printJson, type Command } from './command.ts';
import { durationFlag, EITHER_KEY_USAGE } from './flags.ts';
import { KEY_SHOWN_ONCE, renderCreatedKey, tenantPositionals } from './keys-create.ts';
import { cell, renderTable, timeCell } from './table.ts';

export function renderKeyList(keys: ApiKeyList['keys']): string {
  if (keys.length === 0) return 'no keys';
  return renderTable(
    ['ID', 'PREFIX', 'CREATED', 'REVOKED'],
    keys.map((k) => [cell(k.id), cell(k.prefix), timeCell(k.createdAt), timeCell(k.revokedAt)]),
  );
}

export const keysList: Command = {
  usage: `Usage: belfry keys list [<tenantId>] [options]

Lists API keys by id and prefix, revoked ones with the time they stopped working: a tenant's
with the admin key (GET /v1/tenants/{id}/keys), or the calling tenant's own (GET /v1/keys).

Options:
${EITHER_KEY_USAGE}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const { tenantId } = tenantPositionals(positionals, []);
    const client = ApiClient.fromFlags(values, tenantId === undefined ? 'tenant' : 'admin', io);
    const keys = await client.call((b) =>
      tenantId === undefined ? b.account.listKeys() : b.tenants.listKeys(tenantId),
    );
    if (values.json) return printJson(io, { keys });
    io.out(renderKeyList(keys));
  },
};

export const keysRevoke: Command = {
  usage: `Usage: belfry keys revoke [<tenantId>] <keyId> [options]

Revokes an API key at once (DELETE /v1/tenants/{id}/keys/{keyId} with the admin key, or
DELETE /v1/keys/{keyId} for the calling tenant's own). Prints nothing with --json (the API
answers 204): the exit code says it.

Options:
${EITHER_KEY_USAGE}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const { tenantId, rest } = tenantPositionals(positionals, ['keyId']);
    const keyId = rest[0];
    const client = ApiClient.fromFlags(values, tenantId === undefined ? 'tenant' : 'admin', io);
    await client.call((b) =>
      tenantId === undefined ? b.account.revokeKey(keyId) : b.tenants.revokeKey(tenantId, keyId),
    );
    if (!values.json) io.out(`revoked key ${keyId}`);
  },
};

const rotateOptions = { ...COMMON_OPTIONS, 'grace-period': { type: 'string' } } as const;

export const keysRotate: Command = {
  usage: `Usage: belfry keys rotate [<tenantId>] <keyId> [options]

Replaces an API key with a new one, printed once (POST /v1/tenants/{id}/keys/{keyId}/rotate with
the admin key, or POST /v1/keys/{keyId}/rotate for the calling tenant's own).

Options:
  --grace-period <dur>  how long the old key keeps working (up to 7d; default 0: revoked at once)
${EITHER_KEY_USAGE}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: rotateOptions, allowPositionals: true });
    const { tenantId, rest } = tenantPositionals(positionals, ['keyId']);
    const keyId = rest[0];
    const request =
      values['grace-period'] === undefined
        ? {}
        : { gracePeriod: durationFlag('--grace-period', values['grace-period']) };
    const client = ApiClient.fromFlags(values, tenantId === undefined ? 'tenant' : 'admin', io);
    const rotated = await client.call((b) =>
      tenantId === undefined ? b.account.rotateKey(keyId, request) : b.tenants.rotateKey(tenantId, keyId, request),
    );
    if (values.json) return printJson(io, rotated);
    io.out(renderCreatedKey(rotated));
    io.err(KEY_SHOWN_ONCE);
  },
};
