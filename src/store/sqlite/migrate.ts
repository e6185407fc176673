/**
 * Numbered migrations (`migrations/NNN_name.sql`), applied in order, each in its own IMMEDIATE
 * transaction together with its row in `schema_migrations`, so a crash leaves either all of one
 * migration or none of it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { SQL } from './queries.ts';

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
    if (mig.version !== i + 1) throw new Error(`sqlite migrations: expected version ${i + 1}, found ${mig.version} (${mig.name})`);
  });
  return out;
}

/** Applies the migrations not yet recorded; returns the versions it applied. */
export function migrate(db: Database.Database, now: number): number[] {
  db.exec(SQL.migrationsTableCreate);
  const applied: number[] = [];
  for (const mig of loadMigrations()) {
    const apply = db.transaction(() => {
      // Re-read inside the write transaction: another connection may have applied it meanwhile.
      const done = db.prepare<unknown[], { version: number }>(SQL.migrationsApplied).all();
      if (done.some((row) => row.version === mig.version)) return false;
      db.exec(mig.sql);
      db.prepare(SQL.migrationRecord).run({ version: mig.version, name: mig.name, appliedAt: now });
      return true;
    });
    if (apply.immediate()) applied.push(mig.version);
  }
  return applied;
}
