/** Source rows as both backends return them, and their mapping to records. */
import {
  SOURCE_ERRORS_MAX,
  type SourceError,
  type SourceRecord,
  type SourceReportParams,
  type SourceSpec,
  type SourceState,
} from '../sources.ts';

export interface SourceRow {
  tenant_id: string;
  name: string;
  version: number;
  spec: string;
  state: string;
  /** PostgreSQL bigint arrives as a string. */
  accepted_count: number | string;
  rejected_count: number | string;
  last_errors: string;
  lag: string;
  created_at: number | string;
  updated_at: number | string;
}

export const SOURCE_COLUMNS = `tenant_id, name, version, spec, state, accepted_count, rejected_count, last_errors, lag, created_at, updated_at`;

export function sourceFromRow(r: SourceRow): SourceRecord {
  return {
    tenantId: r.tenant_id,
    name: r.name,
    version: Number(r.version),
    spec: JSON.parse(r.spec) as SourceSpec,
    state: r.state as SourceState,
    acceptedCount: Number(r.accepted_count),
    rejectedCount: Number(r.rejected_count),
    lastErrors: JSON.parse(r.last_errors) as SourceError[],
    lag: JSON.parse(r.lag) as Record<string, number>,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/** The record after a report. */
export function sourceReported(cur: SourceRecord, p: SourceReportParams): SourceRecord {
  return {
    ...cur,
    acceptedCount: cur.acceptedCount + p.acceptedAdd,
    rejectedCount: cur.rejectedCount + p.rejectedAdd,
    lastErrors: [...cur.lastErrors, ...p.errors.slice(-SOURCE_ERRORS_MAX)].slice(-SOURCE_ERRORS_MAX),
    state: p.state ?? cur.state,
    lag: p.lag ? { ...cur.lag, ...p.lag } : cur.lag,
    updatedAt: p.now,
  };
}

/** A new source, `cur` with a new spec (version + 1), or `cur` unchanged when the spec is the same (a repeated PUT restarts nothing). */
export function sourcePutRecord(
  cur: SourceRecord | null,
  p: { tenantId: string; name: string; spec: SourceSpec; now: number },
): SourceRecord {
  if (cur && JSON.stringify(cur.spec) === JSON.stringify(p.spec)) return cur;
  if (cur) return { ...cur, spec: p.spec, version: cur.version + 1, state: 'starting', lag: {}, updatedAt: p.now };
  return {
    tenantId: p.tenantId,
    name: p.name,
    version: 1,
    spec: p.spec,
    state: 'starting',
    acceptedCount: 0,
    rejectedCount: 0,
    lastErrors: [],
    lag: {},
    createdAt: p.now,
    updatedAt: p.now,
  };
}

/** The record's columns as named parameters (SQLite) in SOURCE_COLUMNS order (PostgreSQL). */
export function sourceColumns(s: SourceRecord): unknown[] {
  return [
    s.tenantId,
    s.name,
    s.version,
    JSON.stringify(s.spec),
    s.state,
    s.acceptedCount,
    s.rejectedCount,
    JSON.stringify(s.lastErrors),
    JSON.stringify(s.lag),
    s.createdAt,
    s.updatedAt,
  ];
}
