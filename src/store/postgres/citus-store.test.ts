/**
 * The PostgreSQL store distributed on Citus (citus/distribute.ts), on a real cluster of a
 * coordinator and two workers started for this file (test/support/citus.ts): the Store
 * conformance suite, every store in a fresh schema distributed at its creation, and what only
 * the distributed layout has. Skipped, with the reason, where Citus is not installed; never in CI
 * (BELFRY_REQUIRE_CITUS=1).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { citusSkip, startCitus } from '../../../test/support/citus.ts';
import { runStoreConformance } from '../conformance/store-conformance.ts';
import { CITUS_DISTRIBUTED_TABLES, CITUS_REFERENCE_TABLES } from './citus/distribute.ts';
import { openPostgresStore } from './postgres-store.ts';

const skip = citusSkip();
const url = skip ? '' : await startCitus();
const admin = skip ? null : new pg.Pool({ connectionString: url, max: 2 });
admin?.on('error', () => {});
after(async () => {
  await admin?.end();
});

function freshSchema(): string {
  return `belfry_citus_${randomBytes(6).toString('hex')}`;
}

async function openFresh(schema: string) {
  return openPostgresStore({ url, schema, poolSize: 4, citus: true });
}

if (skip) {
  describe('Store conformance: postgres on Citus', () => {
    it('needs Citus', (t) => {
      t.skip(skip);
    });
  });
} else {
  runStoreConformance('postgres on Citus', async () => {
    const schema = freshSchema();
    const store = await openFresh(schema);
    return {
      store,
      cleanup: async () => {
        await store.close();
        await admin!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      },
      reopen: () => openFresh(schema),
    };
  });

  describe('PostgresStore on Citus', () => {
    it('distributes events, transitions and the locator by shard, co-located, and copies the rest to every worker', async () => {
      const schema = freshSchema();
      const store = await openFresh(schema);
      try {
        const tables = await admin!.query<{ name: string; type: string; column: string; colocation: number }>(
          `SELECT c.relname AS name, t.citus_table_type AS type, t.distribution_column AS column, t.colocation_id AS colocation
             FROM citus_tables t JOIN pg_class c ON c.oid = t.table_name JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 ORDER BY c.relname`,
          [schema],
        );
        const byName = new Map(tables.rows.map((r) => [r.name, r]));
        assert.deepEqual(
          [...byName.keys()].sort(),
          [...CITUS_DISTRIBUTED_TABLES, ...CITUS_REFERENCE_TABLES].sort(),
          'every table of the schema is a Citus table',
        );
        for (const name of CITUS_DISTRIBUTED_TABLES) {
          assert.equal(byName.get(name)?.type, 'distributed', name);
          assert.equal(byName.get(name)?.column, 'shard', name);
          assert.equal(
            byName.get(name)?.colocation,
            byName.get('events')?.colocation,
            `${name} co-located with events`,
          );
        }
        for (const name of CITUS_REFERENCE_TABLES) assert.equal(byName.get(name)?.type, 'reference', name);
        await store.close();
        // Opening it again changes nothing.
        await (await openFresh(schema)).close();
      } finally {
        await store.close();
        await admin!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      }
    });
  });
}
