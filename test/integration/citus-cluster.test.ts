/**
 * The Citus test harness (test/support/citus.ts): a throw-away cluster starts and its coordinator
 * knows both workers. Skipped, with the reason, where Citus is not installed (unless
 * BELFRY_REQUIRE_CITUS=1).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { CITUS_WORKERS, citusSkip, startCitus } from '../support/citus.ts';

describe('Citus test cluster', { skip: citusSkip() }, () => {
  it('starts a coordinator with its workers active', async () => {
    const db = new pg.Client({ connectionString: await startCitus() });
    await db.connect();
    try {
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM citus_get_active_worker_nodes()');
      assert.equal(rows[0].n, CITUS_WORKERS);
      assert.equal(CITUS_WORKERS, 2);
    } finally {
      await db.end();
    }
  });
});
