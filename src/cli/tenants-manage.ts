/**
 * `belfry tenants list|get|edit|rotate-secret` (admin): /v1/tenants, through the SDK's `tenants` calls.
 */
import type { TenantDetail, TenantList, TenantPatch } from '@belfry/client';
import { RETENTION_STATES } from '../core/retention.ts';
import { LIMIT_SPECS } from '../core/tenant-limits.ts';
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
import {
  durationFlag,
  noPositionals,
  pairsFlag,
  printRotatedSecret,
  SECRET_ROTATE_OPTIONS,
  SECRET_ROTATE_OPTIONS_USAGE,
  secretRotateRequest,
} from './flags.ts';
import { cell, renderFields, renderTable, timeCell } from './table.ts';

export function renderTenantList(tenants: TenantList['tenants']): string {
  if (tenants.length === 0) return 'no tenants';
  return renderTable(
    ['ID', 'NAME', 'DURABILITY', 'MISSED AFTER', 'CREATED'],
    tenants.map((t) => [cell(t.id), cell(t.name), cell(t.durability), cell(t.missedAfter), timeCell(t.createdAt)]),
  );
}

/** `name  value  own|default` rows of values in effect, marking those the tenant has of its own. */
function settingsTable(header: string, values: object, own: object): string {
  return renderTable(
    [header, 'VALUE', 'SET BY'],
    Object.entries(values).map(([name, value]) => [
      name,
      cell(value),
      (own as Record<string, unknown>)[name] === undefined ? 'default' : 'tenant',
    ]),
  );
}

export function renderTenantDetail(t: TenantDetail): string {
  return [
    renderFields([
      ['id', cell(t.id)],
      ['name', cell(t.name)],
      ['durability', cell(t.durability)],
      ['missed after', cell(t.missedAfter)],
      ['created at', timeCell(t.createdAt)],
    ]),
    '',
    settingsTable('LIMIT', t.limits, t.overrides),
    '',
    settingsTable('RETENTION', t.retention, t.retentionOverrides),
  ].join('\n');
}

export const tenantsList: Command = {
  usage: `Usage: belfry tenants list [options]

Lists every tenant (GET /v1/tenants). Needs the admin key.

Options:
${commonUsage('BELFRY_ADMIN_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    noPositionals(positionals);
    const tenants = await ApiClient.fromFlags(values, 'admin', io).call((b) => b.tenants.list());
    if (values.json) return printJson(io, { tenants });
    io.out(renderTenantList(tenants));
  },
};

export const tenantsGet: Command = {
  usage: `Usage: belfry tenants get <tenantId> [options]

Shows a tenant with its limits and retention in effect, each marked as the tenant's own or the
node's default (GET /v1/tenants/{id}). Needs the admin key.

Options:
${commonUsage('BELFRY_ADMIN_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: COMMON_OPTIONS, allowPositionals: true });
    const tenantId = onePositional(positionals, 'tenantId');
    const tenant = await ApiClient.fromFlags(values, 'admin', io).call((b) => b.tenants.get(tenantId));
    if (values.json) return printJson(io, tenant);
    io.out(renderTenantDetail(tenant));
  },
};

const LIMIT_NAMES = LIMIT_SPECS.map((s) => s.name);

/** Names as help lines under an option, indented to its text and wrapped before 100 columns. */
function wrapList(names: readonly string[]): string {
  const indent = ' '.repeat(24);
  const lines: string[] = [];
  let line = '';
  for (const name of names) {
    const next = line === '' ? name : `${line}, ${name}`;
    if (indent.length + next.length > 98 && line !== '') {
      lines.push(`${indent}${line},`);
      line = name;
    } else line = next;
  }
  lines.push(indent + line);
  return lines.join('\n');
}
const RESET = 'default';

const editOptions = {
  ...COMMON_OPTIONS,
  limit: { type: 'string', multiple: true },
  retention: { type: 'string', multiple: true },
  durability: { type: 'string' },
  'missed-after': { type: 'string' },
} as const;

export interface TenantEditFlags {
  limit?: string[];
  retention?: string[];
  durability?: string;
  'missed-after'?: string;
}

const numeric = (text: string) => (/^\d+$/.test(text) ? Number(text) : text);

/** The PATCH body from the flags; names are checked here, values by the API (a 400 names each). */
export function buildTenantPatch(flags: TenantEditFlags): TenantPatch {
  const patch: TenantPatch = {};
  if (flags.limit !== undefined) {
    const limits: Record<string, number | string | null> = {};
    for (const [name, value] of pairsFlag('--limit', flags.limit)) {
      if (!LIMIT_NAMES.includes(name))
        throw new UsageError(`--limit: no limit named ${name}; the limits are ${LIMIT_NAMES.join(', ')}`);
      limits[name] = value === RESET ? null : numeric(value);
    }
    patch.limits = limits;
  }
  if (flags.retention !== undefined) {
    const retention: Record<string, number | string | null> = {};
    for (const [state, value] of pairsFlag('--retention', flags.retention)) {
      if (!(RETENTION_STATES as readonly string[]).includes(state))
        throw new UsageError(`--retention: not a terminal state: ${state}; give one of ${RETENTION_STATES.join(', ')}`);
      retention[state] = value === RESET ? null : durationFlag(`--retention ${state}`, value);
    }
    patch.retention = retention;
  }
  if (flags.durability !== undefined) {
    if (flags.durability !== 'strict' && flags.durability !== 'relaxed')
      throw new UsageError(`--durability: expected strict or relaxed: ${flags.durability}`);
    patch.durability = flags.durability;
  }
  const missedAfter = flags['missed-after'];
  if (missedAfter !== undefined)
    patch.missedAfter = missedAfter === RESET ? null : durationFlag('--missed-after', missedAfter);
  if (Object.keys(patch).length === 0)
    throw new UsageError('give at least one of --limit, --retention, --durability, --missed-after');
  return patch;
}

export const tenantsEdit: Command = {
  usage: `Usage: belfry tenants edit <tenantId> [options]

Changes a tenant's limits, retention and policy (PATCH /v1/tenants/{id}); what is not given stays.
'default' gives a setting back to the node's default. Needs the admin key.

Options:
  --limit <name=value>  a limit (repeatable), one of:
${wrapList(LIMIT_NAMES)}
  --retention <state=dur>  how long finished events are kept (repeatable), per state:
${wrapList(RETENTION_STATES)}
  --durability <d>      strict or relaxed (on PostgreSQL: synchronous_commit=off for this tenant)
  --missed-after <dur>  archive an event whose first fire is later than this
${commonUsage('BELFRY_ADMIN_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: editOptions, allowPositionals: true });
    const tenantId = onePositional(positionals, 'tenantId');
    const patch = buildTenantPatch(values);
    const tenant = await ApiClient.fromFlags(values, 'admin', io).call((b) => b.tenants.patch(tenantId, patch));
    if (values.json) return printJson(io, tenant);
    io.out(renderTenantDetail(tenant));
  },
};

const rotateOptions = { ...COMMON_OPTIONS, ...SECRET_ROTATE_OPTIONS } as const;

export const tenantsRotateSecret: Command = {
  usage: `Usage: belfry tenants rotate-secret <tenantId> [options]

Gives a tenant a new signing secret, for its deliveries to inline URLs, printed once
(POST /v1/tenants/{id}/signing-secret/rotate). Needs the admin key.

Options:
${SECRET_ROTATE_OPTIONS_USAGE}
${commonUsage('BELFRY_ADMIN_KEY')}`,
  async run(argv, io) {
    const { values, positionals } = parseCommandLine({ args: argv, options: rotateOptions, allowPositionals: true });
    const tenantId = onePositional(positionals, 'tenantId');
    const request = secretRotateRequest(values);
    const rotated = await ApiClient.fromFlags(values, 'admin', io).call((b) =>
      b.tenants.rotateSigningSecret(tenantId, request),
    );
    printRotatedSecret(io, values.json, rotated);
  },
};
