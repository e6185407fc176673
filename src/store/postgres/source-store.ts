/**
 * The source methods of the PostgreSQL backend (see ../sources.ts). Every statement is below,
 * under a comment naming its parameters and what it returns; they run as named prepared
 * statements. A put or a report locks the row (FOR UPDATE) and writes it whole in one
 * transaction, so reports of several nodes add up and a report never undoes a put.
 */
import type pg from 'pg';
import {
  SOURCE_COLUMNS,
  sourceColumns,
  sourceFromRow,
  sourcePutRecord,
  sourceReported,
  type SourceRow,
} from '../core/source-rows.ts';
import * as Src from '../sources.ts';
import { inTransaction, rethrowUnavailable, type Queryable } from './db.ts';
import { TX } from './queries.ts';

const SQL = {
  // ($1 tenantId) → one row when the tenant exists, locking it against other source creates of that tenant.
  sourceTenantLock: `SELECT 1 FROM tenants WHERE id = $1 FOR NO KEY UPDATE`,
  // ($1 tenantId) → { n }: the tenant's sources (a range of the primary key).
  sourceCount: `SELECT count(*)::int AS n FROM sources WHERE tenant_id = $1`,
  // ($1 tenantId, $2 name) → SourceRow | none.
  sourceGet: `SELECT ${SOURCE_COLUMNS} FROM sources WHERE tenant_id = $1 AND name = $2`,
  // ($1 tenantId, $2 name) → SourceRow | none, row-locked until the transaction ends.
  sourceGetForUpdate: `SELECT ${SOURCE_COLUMNS} FROM sources WHERE tenant_id = $1 AND name = $2 FOR UPDATE`,
  // ($1..$11 every column in SOURCE_COLUMNS order) → nothing; replaces the row of (tenant_id, name).
  sourceUpsert: `INSERT INTO sources (${SOURCE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    ON CONFLICT (tenant_id, name) DO UPDATE SET version = EXCLUDED.version, spec = EXCLUDED.spec, state = EXCLUDED.state,
    accepted_count = EXCLUDED.accepted_count, rejected_count = EXCLUDED.rejected_count, last_errors = EXCLUDED.last_errors, lag = EXCLUDED.lag,
    updated_at = EXCLUDED.updated_at`,
  // ($1 tenantId, $2 afterName, $3 limit) → SourceRow[] by name.
  sourceList: `SELECT ${SOURCE_COLUMNS} FROM sources WHERE tenant_id = $1 AND name > $2 ORDER BY name LIMIT $3`,
  // ($1 tenantId, $2 name, $3 limit) → SourceRow[] after (tenantId, name) in key order.
  sourceListAll: `SELECT ${SOURCE_COLUMNS} FROM sources WHERE (tenant_id, name) > ($1, $2) ORDER BY tenant_id, name LIMIT $3`,
  // ($1 tenantId, $2 name) → rowCount 1 when it existed.
  sourceDelete: `DELETE FROM sources WHERE tenant_id = $1 AND name = $2`,
};

function q<R extends pg.QueryResultRow>(
  db: Queryable,
  name: keyof typeof SQL,
  values: unknown[],
): Promise<pg.QueryResult<R>> {
  return db.query<R>({ name: `belfry_${name}`, text: SQL[name], values }).catch(rethrowUnavailable);
}

export class PostgresSources implements Src.SourceStore {
  constructor(private readonly pool: pg.Pool) {}

  async sourcePut(p: {
    tenantId: string;
    name: string;
    spec: Src.SourceSpec;
    perTenantMax: number;
    now: number;
  }): Promise<Src.SourcePutResult> {
    return inTransaction(this.pool, TX.begin, async (client) => {
      await q(client, 'sourceTenantLock', [p.tenantId]);
      const row = (await q<SourceRow>(client, 'sourceGetForUpdate', [p.tenantId, p.name])).rows[0];
      const cur = row ? sourceFromRow(row) : null;
      if (!cur && (await q<{ n: number }>(client, 'sourceCount', [p.tenantId])).rows[0].n >= p.perTenantMax)
        return { kind: 'limit' as const };
      const next = sourcePutRecord(cur, p);
      await q(client, 'sourceUpsert', sourceColumns(next));
      return { kind: cur ? ('replaced' as const) : ('created' as const), source: next };
    });
  }

  async sourceGet({ tenantId, name }: { tenantId: string; name: string }): Promise<Src.SourceRecord | null> {
    const row = (await q<SourceRow>(this.pool, 'sourceGet', [tenantId, name])).rows[0];
    return row ? sourceFromRow(row) : null;
  }

  async sourceList({
    tenantId,
    afterName,
    limit,
  }: {
    tenantId: string;
    afterName?: string;
    limit: number;
  }): Promise<Src.SourceRecord[]> {
    Src.checkSourcePage(limit, 'sourceList');
    return (await q<SourceRow>(this.pool, 'sourceList', [tenantId, afterName ?? '', limit])).rows.map(sourceFromRow);
  }

  async sourceListAll({
    after,
    limit,
  }: {
    after?: { tenantId: string; name: string };
    limit: number;
  }): Promise<Src.SourceRecord[]> {
    Src.checkSourcePage(limit, 'sourceListAll');
    return (await q<SourceRow>(this.pool, 'sourceListAll', [after?.tenantId ?? '', after?.name ?? '', limit])).rows.map(
      sourceFromRow,
    );
  }

  async sourceDelete({ tenantId, name }: { tenantId: string; name: string }): Promise<boolean> {
    return (await q(this.pool, 'sourceDelete', [tenantId, name])).rowCount === 1;
  }

  async sourceReport(p: Src.SourceReportParams): Promise<boolean> {
    return inTransaction(this.pool, TX.begin, async (client) => {
      const row = (await q<SourceRow>(client, 'sourceGetForUpdate', [p.tenantId, p.name])).rows[0];
      if (!row) return false;
      await q(client, 'sourceUpsert', sourceColumns(sourceReported(sourceFromRow(row), p)));
      return true;
    });
  }
}
