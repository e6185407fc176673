/**
 * Numbered migrations (`migrations/NNN_name.sql`), applied in order, each in its own IMMEDIATE
 * transaction together with its row in `schema_migrations`, so a crash leaves either all of one
 * migration or none of it.
 */
import type { Connection } from './driver.ts';
import { loadMigrationsFrom, type Migration } from '../core/migrations.ts';
import { SQL } from './queries.ts';

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);

/** The migrations shipped with this build, by version; throws on a gap or a duplicate number. */
export function loadMigrations(): Migration[] {
  return loadMigrationsFrom(MIGRATIONS_DIR, 'sqlite');
}

/** Applies the migrations not yet recorded; returns the versions it applied. */
export function migrate(db: Connection, now: number): number[] {
  db.exec(SQL.migrationsTableCreate);
  const applied: number[] = [];
  for (const mig of loadMigrations()) {
    const apply = () => {
      // Re-read inside the write transaction: another connection may have applied it meanwhile.
      const done = db.prepare<{ version: number }>(SQL.migrationsApplied).all();
      if (done.some((row) => row.version === mig.version)) return false;
      db.exec(mig.sql);
      db.prepare(SQL.migrationRecord).run({ version: mig.version, name: mig.name, appliedAt: now });
      return true;
    };
    if (db.immediate(apply)) applied.push(mig.version);
  }
  return applied;
}
