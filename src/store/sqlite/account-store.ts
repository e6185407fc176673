/**
 * The tenant, API key and destination methods of the SQLite backend (see ../parts/accounts.ts),
 * on the store's connection (database.ts).
 */
import type * as S from '../store.ts';
import { apiKeyFromRow } from '../core/rows.ts';
import { destinationFromRow, tenantFromRow, tenantSecretsFromColumn } from './rows.ts';
import { SqlitePart } from './database.ts';
import type { AccountStore } from '../parts/accounts.ts';

export class SqliteAccounts extends SqlitePart implements AccountStore {
  async tenantCreate(tenant: S.NewTenantRecord): Promise<void> {
    const { id, name, createdAt } = tenant;
    this.q.tenantInsert.run({
      id,
      name,
      settings: JSON.stringify(tenant.settings),
      createdAt,
      signingSecrets: JSON.stringify(tenant.signingSecrets ?? []),
    });
  }

  async tenantGet(params: { id: string }): Promise<S.TenantRecord | null> {
    const row = this.q.tenantGet.get(params);
    return row ? tenantFromRow(row) : null;
  }

  async tenantList(): Promise<S.TenantRecord[]> {
    return this.q.tenantList.all().map(tenantFromRow);
  }

  async tenantUpdate(params: { id: string; settings: Record<string, unknown> }): Promise<S.TenantRecord | null> {
    const row = this.q.tenantUpdate.get({ id: params.id, settings: JSON.stringify(params.settings) });
    return row ? tenantFromRow(row) : null;
  }

  async tenantSecretsGet(params: { id: string }): Promise<S.DestinationSecret[] | null> {
    const row = this.q.tenantSecretsGet.get(params);
    return row ? tenantSecretsFromColumn(row.signing_secrets) : null;
  }

  async tenantSecretsSwap(params: {
    id: string;
    expected: S.DestinationSecret[];
    secrets: S.DestinationSecret[];
  }): Promise<boolean> {
    const { id, expected, secrets } = params;
    return (
      this.q.tenantSecretsSwap.run({ id, expected: JSON.stringify(expected), secrets: JSON.stringify(secrets) })
        .changes === 1
    );
  }

  async apiKeyCreate(key: S.ApiKeyRecord): Promise<void> {
    this.q.apiKeyInsert.run(key);
  }

  async apiKeyFindByHash(params: { hash: string }): Promise<S.ApiKeyRecord | null> {
    const row = this.q.apiKeyByHash.get({ hash: params.hash });
    return row ? apiKeyFromRow(row) : null;
  }

  async apiKeyList(params: { tenantId: string }): Promise<S.ApiKeyRecord[]> {
    return this.q.apiKeyList.all({ tenantId: params.tenantId }).map(apiKeyFromRow);
  }

  async apiKeyRevoke(params: { tenantId: string; id: string; now: number; at?: number }): Promise<boolean> {
    const { tenantId, id, now } = params;
    return this.q.apiKeyRevoke.run({ tenantId, id, now, at: params.at ?? now }).changes === 1;
  }

  async destinationPut(params: {
    destination: S.DestinationRecord;
  }): Promise<{ created: boolean; destination: S.DestinationRecord }> {
    const d = params.destination;
    return this.write(() => {
      const created = this.q.destinationGet.get({ tenantId: d.tenantId, name: d.name }) === undefined;
      const row = this.q.destinationUpsert.get({
        tenantId: d.tenantId,
        name: d.name,
        config: JSON.stringify(d.config),
        secrets: JSON.stringify(d.secrets),
        createdAt: d.createdAt,
        updatedAt: d.updatedAt,
      });
      if (!row) throw new Error(`sqlite: destination ${d.tenantId}/${d.name} upsert returned nothing`);
      return { created, destination: destinationFromRow(row) };
    });
  }

  async destinationGet(params: { tenantId: string; name: string }): Promise<S.DestinationRecord | null> {
    const row = this.q.destinationGet.get(params);
    return row ? destinationFromRow(row) : null;
  }

  async destinationList(params: { tenantId: string }): Promise<S.DestinationRecord[]> {
    return this.q.destinationList.all(params).map(destinationFromRow);
  }

  async destinationDelete(params: { tenantId: string; name: string }): Promise<boolean> {
    return this.q.destinationDelete.run(params).changes === 1;
  }
}
