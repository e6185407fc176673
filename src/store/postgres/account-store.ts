/**
 * The tenant, API key and destination methods of the PostgreSQL backend (see ../parts/accounts.ts),
 * on the store's pools (database.ts).
 */
import type * as S from '../store.ts';
import { apiKeyFromRow, type ApiKeyRow } from '../core/rows.ts';
import { run } from './db.ts';
import {
  destinationFromRow,
  tenantFromRow,
  tenantSecretsFromColumn,
  type DestinationRow,
  type TenantRow,
} from './rows.ts';
import { PostgresPart } from './database.ts';
import type { AccountStore } from '../parts/accounts.ts';

export class PostgresAccounts extends PostgresPart implements AccountStore {
  async tenantCreate(tenant: S.NewTenantRecord): Promise<void> {
    const secrets = JSON.stringify(tenant.signingSecrets ?? []);
    await run(this.pool, 'tenantInsert', [
      tenant.id,
      tenant.name,
      JSON.stringify(tenant.settings),
      tenant.createdAt,
      secrets,
    ]);
  }

  async tenantGet(params: { id: string }): Promise<S.TenantRecord | null> {
    const row = (await run<TenantRow>(this.pool, 'tenantGet', [params.id])).rows[0];
    return row ? tenantFromRow(row) : null;
  }

  async tenantList(): Promise<S.TenantRecord[]> {
    return (await run<TenantRow>(this.pool, 'tenantList')).rows.map(tenantFromRow);
  }

  async tenantUpdate(params: { id: string; settings: Record<string, unknown> }): Promise<S.TenantRecord | null> {
    const row = (await run<TenantRow>(this.pool, 'tenantUpdate', [params.id, JSON.stringify(params.settings)])).rows[0];
    // This node sees a durability change at once; the others within TENANT_SETTINGS_TTL_MS.
    this.durability.clear();
    return row ? tenantFromRow(row) : null;
  }

  async tenantSecretsGet(params: { id: string }): Promise<S.DestinationSecret[] | null> {
    const row = (await run<{ signing_secrets: unknown }>(this.pool, 'tenantSecretsGet', [params.id])).rows[0];
    return row ? tenantSecretsFromColumn(row.signing_secrets) : null;
  }

  async tenantSecretsSwap(params: {
    id: string;
    expected: S.DestinationSecret[];
    secrets: S.DestinationSecret[];
  }): Promise<boolean> {
    const res = await run(this.pool, 'tenantSecretsSwap', [
      params.id,
      JSON.stringify(params.expected),
      JSON.stringify(params.secrets),
    ]);
    return res.rowCount === 1;
  }

  async apiKeyCreate(key: S.ApiKeyRecord): Promise<void> {
    await run(this.pool, 'apiKeyInsert', [key.id, key.tenantId, key.hash, key.prefix, key.createdAt, key.revokedAt]);
  }

  async apiKeyFindByHash(params: { hash: string }): Promise<S.ApiKeyRecord | null> {
    const row = (await run<ApiKeyRow>(this.pool, 'apiKeyByHash', [params.hash])).rows[0];
    return row ? apiKeyFromRow(row) : null;
  }

  async apiKeyList(params: { tenantId: string }): Promise<S.ApiKeyRecord[]> {
    return (await run<ApiKeyRow>(this.pool, 'apiKeyList', [params.tenantId])).rows.map(apiKeyFromRow);
  }

  async apiKeyRevoke(params: { tenantId: string; id: string; now: number; at?: number }): Promise<boolean> {
    return (
      (await run(this.pool, 'apiKeyRevoke', [params.tenantId, params.id, params.now, params.at ?? params.now]))
        .rowCount === 1
    );
  }

  async destinationPut(params: {
    destination: S.DestinationRecord;
  }): Promise<{ created: boolean; destination: S.DestinationRecord }> {
    const d = params.destination;
    const row = (
      await run<DestinationRow & { created: boolean }>(this.pool, 'destinationUpsert', [
        d.tenantId,
        d.name,
        JSON.stringify(d.config),
        JSON.stringify(d.secrets),
        d.createdAt,
        d.updatedAt,
      ])
    ).rows[0];
    if (!row) throw new Error(`postgres: destination ${d.tenantId}/${d.name} upsert returned nothing`);
    return { created: row.created, destination: destinationFromRow(row) };
  }

  async destinationGet(params: { tenantId: string; name: string }): Promise<S.DestinationRecord | null> {
    const row = (await run<DestinationRow>(this.pool, 'destinationGet', [params.tenantId, params.name])).rows[0];
    return row ? destinationFromRow(row) : null;
  }

  async destinationList(params: { tenantId: string }): Promise<S.DestinationRecord[]> {
    return (await run<DestinationRow>(this.pool, 'destinationList', [params.tenantId])).rows.map(destinationFromRow);
  }

  async destinationDelete(params: { tenantId: string; name: string }): Promise<boolean> {
    return (await run(this.pool, 'destinationDelete', [params.tenantId, params.name])).rowCount === 1;
  }
}
