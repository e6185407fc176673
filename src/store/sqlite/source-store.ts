/**
 * The source methods of the SQLite backend (see ../sources.ts), each write in one IMMEDIATE
 * transaction of the store's connection. Every statement is below, under a comment naming its
 * parameters and what it returns.
 */
import type { Connection } from './driver.ts';
import {
  SOURCE_COLUMNS,
  sourceColumns,
  sourceFromRow,
  sourcePutRecord,
  sourceReported,
  type SourceRow,
} from '../core/source-rows.ts';
import * as Src from '../sources.ts';

const SQL = {
  // (@tenantId) → { n }: the tenant's sources (a range of the primary key).
  sourceCount: `SELECT count(*) AS n FROM sources WHERE tenant_id = @tenantId`,
  // (@tenantId, @name) → SourceRow | undefined.
  sourceGet: `SELECT ${SOURCE_COLUMNS} FROM sources WHERE tenant_id = @tenantId AND name = @name`,
  // (?1..?11 every column in SOURCE_COLUMNS order) → changes 1; replaces the row of (tenant_id, name).
  sourceUpsert: `INSERT OR REPLACE INTO sources (${SOURCE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  // (@tenantId, @afterName, @limit) → SourceRow[] by name.
  sourceList: `SELECT ${SOURCE_COLUMNS} FROM sources WHERE tenant_id = @tenantId AND name > @afterName ORDER BY name LIMIT @limit`,
  // (@tenantId, @name, @limit) → SourceRow[] after (tenantId, name) in key order.
  sourceListAll: `SELECT ${SOURCE_COLUMNS} FROM sources WHERE (tenant_id, name) > (@tenantId, @name) ORDER BY tenant_id, name LIMIT @limit`,
  // (@tenantId, @name) → changes.
  sourceDelete: `DELETE FROM sources WHERE tenant_id = @tenantId AND name = @name`,
};

export class SqliteSources implements Src.SourceStore {
  private readonly q;

  constructor(
    db: Connection,
    /** Runs fn in one IMMEDIATE transaction. */
    private readonly write: <T>(fn: () => T) => T,
  ) {
    const p = <Row = unknown>(sql: string) => db.prepare<Row>(sql);
    this.q = {
      count: p<{ n: number }>(SQL.sourceCount),
      get: p<SourceRow>(SQL.sourceGet),
      upsert: p(SQL.sourceUpsert),
      list: p<SourceRow>(SQL.sourceList),
      listAll: p<SourceRow>(SQL.sourceListAll),
      delete: p(SQL.sourceDelete),
    };
  }

  private getNow(tenantId: string, name: string): Src.SourceRecord | null {
    const row = this.q.get.get({ tenantId, name });
    return row ? sourceFromRow(row) : null;
  }

  async sourcePut(p: {
    tenantId: string;
    name: string;
    spec: Src.SourceSpec;
    perTenantMax: number;
    now: number;
  }): Promise<Src.SourcePutResult> {
    return this.write(() => {
      const cur = this.getNow(p.tenantId, p.name);
      if (!cur && (this.q.count.get({ tenantId: p.tenantId })?.n ?? 0) >= p.perTenantMax) return { kind: 'limit' };
      const next = sourcePutRecord(cur, p);
      this.q.upsert.run(...sourceColumns(next));
      return { kind: cur ? 'replaced' : 'created', source: next };
    });
  }

  async sourceGet({ tenantId, name }: { tenantId: string; name: string }): Promise<Src.SourceRecord | null> {
    return this.getNow(tenantId, name);
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
    return this.q.list.all({ tenantId, afterName: afterName ?? '', limit }).map(sourceFromRow);
  }

  async sourceListAll({
    after,
    limit,
  }: {
    after?: { tenantId: string; name: string };
    limit: number;
  }): Promise<Src.SourceRecord[]> {
    Src.checkSourcePage(limit, 'sourceListAll');
    return this.q.listAll.all({ tenantId: after?.tenantId ?? '', name: after?.name ?? '', limit }).map(sourceFromRow);
  }

  async sourceDelete({ tenantId, name }: { tenantId: string; name: string }): Promise<boolean> {
    return this.write(() => this.q.delete.run({ tenantId, name }).changes === 1);
  }

  async sourceReport(p: Src.SourceReportParams): Promise<boolean> {
    return this.write(() => {
      const cur = this.getNow(p.tenantId, p.name);
      if (!cur) return false;
      this.q.upsert.run(...sourceColumns(sourceReported(cur, p)));
      return true;
    });
  }
}
