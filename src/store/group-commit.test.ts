import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GroupCommitter } from './group-commit.ts';
import { openSqliteStore } from './sqlite/sqlite-store.ts';
import { newEvent, newTenant } from './conformance/fixtures.ts';
import type { EventInsertManyParams } from './store.ts';

describe('GroupCommitter', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'belfry-gc-'));
  const store = await openSqliteStore({ dataDir: dir });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commits concurrent inserts in one transaction and answers each after it, in order', async () => {
    const tenant = await newTenant(store);
    const calls: number[] = [];
    const committed = new Set<string>();
    const counting = {
      eventInsertMany: async (params: EventInsertManyParams) => {
        calls.push(params.events.length);
        const results = await store.eventInsertMany(params);
        for (const e of params.events) committed.add(e.id);
        return results;
      },
    };
    const gc = new GroupCommitter(counting, () => Date.now());
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        gc.insert([newEvent(tenant, `gc-${i}`)]).then((r) => {
          // Each caller hears back only once its event is committed.
          assert.ok(committed.has(`gc-${i}`));
          return r;
        }),
      ),
    );
    assert.deepEqual(calls, [200]);
    answers.forEach((r, i) => {
      assert.equal(r.length, 1);
      assert.equal(r[0].kind, 'created');
      assert.equal(r[0].event.id, `gc-${i}`);
    });
  });

  it('bounds a transaction and keeps requests whole', async () => {
    const tenant = await newTenant(store);
    const calls: number[] = [];
    const gc = new GroupCommitter({ eventInsertMany: (p) => (calls.push(p.events.length), store.eventInsertMany(p)) }, () => Date.now(), 250);
    await Promise.all(Array.from({ length: 10 }, (_, i) => gc.insert(Array.from({ length: 100 }, (_, j) => newEvent(tenant, `b-${i}-${j}`)))));
    assert.ok(calls.every((n) => n <= 250 && n % 100 === 0), `batches ${calls}`);
    assert.equal(calls.reduce((a, b) => a + b, 0), 1_000);
  });

  it('rejects every caller of a failed transaction', async () => {
    const gc = new GroupCommitter({ eventInsertMany: async () => Promise.reject(new Error('disk full')) }, () => Date.now());
    const results = await Promise.allSettled([gc.insert([]), gc.insert([])]);
    assert.ok(results.every((r) => r.status === 'rejected' && /disk full/.test(String(r.reason))));
  });
});
