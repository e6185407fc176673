/**
 * The rows of the PostgreSQL backend: bigint arrives as a number (the pool's type parser, db.ts)
 * and jsonb already parsed by the driver, so the shared mappings of ../core/rows.ts take its JSON
 * columns as they are; the event's JSON columns are text, as in every backend.
 */
import * as core from '../core/rows.ts';

export type TenantRow = core.TenantRow<unknown>;
export type DestinationRow = core.DestinationRow<unknown>;
/** With the database clock at the read (now_ms), for the age. */
export type NodeRow = core.NodeRow<unknown> & { now_ms: number };

/** A jsonb value, parsed by the driver. */
function jsonb<T>(value: unknown): T {
  return value as T;
}

export const { tenantFromRow, destinationFromRow, tenantSecretsFromColumn, nodeFromRow } =
  core.jsonRowMappers<unknown>(jsonb);
