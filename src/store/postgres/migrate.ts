/**
 * Numbered migrations (`migrations/NNN_name.sql`), applied in order in ONE transaction that first
 * takes a transaction-scoped advisory lock keyed by the schema name. Several nodes starting at
 * once therefore queue on the lock; each re-reads the ledger after getting it, so exactly one
 * applies each migration and the others find nothing to do. DDL is transactional in PostgreSQL:
 * a crash leaves all the pending migrations or none.
 */
import type pg from 'pg';
import { loadMigrationsFrom, type Migration } from '../core/migrations.ts';
import { distribute, eventsDistributed } from './citus/distribute.ts';
import { inTransaction } from './db.ts';
import { schemaCreateSql, SQL, TX } from './queries.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);

/** The migrations shipped with this build, by version; throws on a gap or a duplicate number. */
export function loadMigrations(): Migration[] {
  return loadMigrationsFrom(MIGRATIONS_DIR, 'postgres');
}

/**
 * Creates the schema if needed and applies the migrations not yet recorded; returns the versions
 * it applied. With `citus`, a schema not yet distributed is then distributed (citus/distribute.ts),
 * in the same transaction.
 */
export async function migrate(pool: pg.Pool, schema: string, opts: { citus?: boolean } = {}): Promise<number[]> {
  const migrations = loadMigrations();
  return inTransaction(pool, TX.begin, async (client) => {
    await client.query(TX.noStatementTimeout);
    await client.query(SQL.migrateLock, [schema]);
    await client.query(schemaCreateSql(schema));
    await client.query(SQL.migrationsTableCreate);
    const done = new Set((await client.query<{ version: number }>(SQL.migrationsApplied)).rows.map((r) => r.version));
    const applied: number[] = [];
    for (const mig of migrations) {
      if (done.has(mig.version)) continue;
      await client.query(mig.sql);
      await client.query(SQL.migrationRecord, [mig.version, mig.name]);
      applied.push(mig.version);
    }
    if (opts.citus && !(await eventsDistributed(client, schema))) await distribute(client, schema);
    return applied;
  });
}
