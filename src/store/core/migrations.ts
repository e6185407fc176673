/**
 * Loading a backend's numbered migrations (`migrations/NNN_name.sql`); how each backend applies
 * them, and in what transaction, stays in its own migrate.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';

const MIGRATION_FILE = /^(\d+)_([a-z0-9_]+)\.sql$/;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * The migrations in `dir` (a folder URL, with its trailing slash), by version; throws on a gap or
 * a duplicate number, naming `backend`.
 */
export function loadMigrationsFrom(dir: URL, backend: string): Migration[] {
  const out: Migration[] = [];
  for (const file of readdirSync(dir)) {
    const m = MIGRATION_FILE.exec(file);
    if (!m) continue;
    out.push({ version: Number(m[1]), name: m[2], sql: readFileSync(new URL(file, dir), 'utf8') });
  }
  out.sort((a, b) => a.version - b.version);
  out.forEach((mig, i) => {
    if (mig.version !== i + 1)
      throw new Error(`${backend} migrations: expected version ${i + 1}, found ${mig.version} (${mig.name})`);
  });
  return out;
}
