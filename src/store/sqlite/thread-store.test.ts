/**
 * The SQLite store on its own thread (thread-store.ts) against the Store conformance suite, plus
 * what the thread adds: errors keep their class and code across it, calls of one tick run in the
 * order made, a second open of the same data dir is refused by the lock, and a dead thread fails
 * calls instead of leaving them waiting.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { BelfryError } from '../../core/errors.ts';
import { simulatedClusterTime } from '../conformance/fixtures.ts';
import { runStoreConformance } from '../conformance/store-conformance.ts';
import { newEvent, newTenant } from '../conformance/fixtures.ts';
import { StoreUnavailableError } from '../store.ts';
import { openSqliteThreadStore } from './thread-store.ts';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'belfry-thread-test-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

runStoreConformance(
  'sqlite-thread',
  async () => {
    const dataDir = tempDir();
    const store = await openSqliteThreadStore({ dataDir });
    return {
      store,
      cleanup: async () => {
        await store.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
      reopen: () => openSqliteThreadStore({ dataDir }),
    };
  },
  simulatedClusterTime(),
);

describe('SqliteThreadStore specifics', () => {
  it('keeps error classes and codes across the thread', async () => {
    const store = await openSqliteThreadStore({ dataDir: tempDir() });
    try {
      await assert.rejects(store.eventList({ tenantId: 't', limit: 0 }), RangeError);
      await assert.rejects(store.eventList({ tenantId: 't', limit: 10, cursor: 'not-a-cursor' }), (err: unknown) => {
        assert.ok(err instanceof BelfryError, String(err));
        assert.equal(err.code, 'invalid_request');
        return true;
      });
    } finally {
      await store.close();
    }
  });

  it('runs the calls of one tick in the order they were made', async () => {
    const store = await openSqliteThreadStore({ dataDir: tempDir() });
    try {
      const tenant = await newTenant(store);
      const now = Date.now();
      const e = newEvent(tenant, 'e1', { fireAt: now + 60_000 });
      // Insert, then read, then cancel, then read, without awaiting in between.
      const [inserted, before, cancelled, afterCancel] = await Promise.all([
        store.eventInsertMany({ events: [e], now }),
        store.eventGet({ tenantId: tenant, id: 'e1' }),
        store.eventCancel({ tenantId: tenant, id: 'e1', now }),
        store.eventGet({ tenantId: tenant, id: 'e1' }),
      ]);
      assert.equal(inserted.length, 1);
      assert.equal(before?.state, 'scheduled');
      assert.ok(cancelled);
      assert.equal(afterCancel?.state, 'canceled');
    } finally {
      await store.close();
    }
  });

  it('refuses a second open of the same data dir (the lock is the process’s)', async () => {
    const dataDir = tempDir();
    const store = await openSqliteThreadStore({ dataDir });
    try {
      await assert.rejects(openSqliteThreadStore({ dataDir }), /in use/);
    } finally {
      await store.close();
    }
    const again = await openSqliteThreadStore({ dataDir });
    await again.close();
  });

  it('fails calls once closed, instead of leaving them waiting', async () => {
    const store = await openSqliteThreadStore({ dataDir: tempDir() });
    await store.close();
    await assert.rejects(store.ping(), StoreUnavailableError);
  });
});
