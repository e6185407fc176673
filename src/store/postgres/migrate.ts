/**
 * Numbered migrations (`migrations/NNN_name.sql`), applied in order in ONE transaction that first
 * takes a transaction-scoped advisory lock keyed by the schema name. Several nodes starting at
 * once therefore queue on the lock; each re-reads the ledger after getting it, so exactly one
 * applies each migration and the others find nothing to do. DDL is transactional in PostgreSQL:
 * a crash leaves all the pending migrations or none.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type pg from 'pg';
import { inTransaction } from './db.ts';
import { schemaCreateSql, SQL, TX } from './queries.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
const MIGRATION_FILE = /^(\d+)_([a-z0-9_]+)\.sql$/;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The migrations shipped with this build, by version; throws on a gap or a duplicate number. */
export function loadMigrations(): Migration[] {
  const out: Migration[] = [];
  for (const file of readdirSync(MIGRATIONS_DIR)) {
    const m = MIGRATION_FILE.exec(file);
    if (!m) continue;
    out.push({ version: Number(m[1]), name: m[2], sql: readFileSync(new URL(file, MIGRATIONS_DIR), 'utf8') });
  }
  out.sort((a, b) => a.version - b.version);
  out.forEach((mig, i) => {
    if (mig.version !== i + 1) throw new Error(`postgres migrations: expected version ${i + 1}, found ${mig.version} (${mig.name})`);
  });
  return out;
}

/** Creates the schema if needed and applies the migrations not yet recorded; returns the versions it applied. */
export async function migrate(pool: pg.Pool, schema: string): Promise<number[]> {
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
    return applied;
  });
}
