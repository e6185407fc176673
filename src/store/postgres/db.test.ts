/**
 * The warm-up helpers of db.ts: onEachConnection on a real server (BELFRY_TEST_POSTGRES_URL, as
 * postgres-store.test.ts; BELFRY_SKIP_POSTGRES=1 skips it on purpose), atMost on timers alone.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { atMost, onEachConnection } from './db.ts';

const URL = process.env.BELFRY_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const skip = process.env.BELFRY_SKIP_POSTGRES === '1' ? 'BELFRY_SKIP_POSTGRES=1' : false;

describe('onEachConnection', () => {
  it('runs on as many connections of their own as asked, and gives every one back, a failing one too', {
    skip,
  }, async () => {
    const pool = new pg.Pool({ connectionString: URL, max: 4 });
    pool.on('error', () => {});
    try {
      const pids: number[] = [];
      let calls = 0;
      await onEachConnection(pool, 4, async (client) => {
        calls++;
        pids.push((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid);
        if (calls === 2) throw new Error('a use that fails');
      });
      assert.equal(calls, 4);
      assert.equal(new Set(pids).size, 4, 'four connections, not one used four times');
      assert.equal(pool.totalCount, 4);
      assert.equal(pool.idleCount, 4, 'every connection is back in the pool');
    } finally {
      await pool.end();
    }
  });
});

describe('atMost', () => {
  it('answers when the work ends, before its bound', async () => {
    let done = false;
    await atMost(
      new Promise<void>((resolve) =>
        setTimeout(() => {
          done = true;
          resolve();
        }, 5),
      ),
      10_000,
    );
    assert.ok(done);
  });

  it('answers at its bound while the work goes on, and never rejects', async () => {
    let release!: () => void;
    const work = new Promise<void>((resolve) => (release = resolve));
    const started = performance.now();
    await atMost(work, 30);
    assert.ok(performance.now() - started >= 25, 'waited for its bound');
    release();
    await atMost(Promise.reject(new Error('failed work')), 10_000);
  });
});
