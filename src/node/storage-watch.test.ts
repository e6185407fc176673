import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { StoreFullError, StoreUnavailableError } from '../store/store.ts';
import { StorageWatch } from './storage-watch.ts';

describe('StorageWatch', () => {
  const dir = mkdtempSync(join(tmpdir(), 'belfry-storage-watch-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const { bavail, bsize } = statfsSync(dir);
  const freeBytes = bavail * bsize;

  it('is storage_full after a write refused for space, while the file system has less free than asked for', async () => {
    const watch = new StorageWatch({ dataDir: dir, roomBytesMin: freeBytes * 2 + 1 });
    assert.deepEqual(await watch.reasons(), []);
    assert.equal(watch.observe(new StoreUnavailableError('down')), false);
    assert.deepEqual(await watch.reasons(), [], 'a store that is away is not a full disk');
    assert.equal(watch.observe(new StoreFullError('sqlite: database or disk is full')), true);
    assert.deepEqual(await watch.reasons(), ['storage_full']);
    assert.deepEqual(await watch.reasons(), ['storage_full'], 'however often asked');
  });

  it('is ready again by itself once the room is there, saying so once each way', async () => {
    const changes: boolean[] = [];
    const watch = new StorageWatch({ dataDir: dir, roomBytesMin: 1, onChange: (full) => changes.push(full) });
    assert.equal(watch.observe(new StoreFullError('sqlite: database or disk is full')), true);
    assert.equal(watch.observe(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })), true);
    assert.deepEqual(await watch.reasons(), []);
    assert.deepEqual(await watch.reasons(), []);
    assert.deepEqual(changes, [true, false]);
  });

  it('is store_damaged after SQLite reports damage, and stays so', async () => {
    const watch = new StorageWatch({ dataDir: dir });
    watch.observe(Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT_INDEX' }));
    assert.deepEqual(await watch.reasons(), ['store_damaged']);
    assert.deepEqual(await watch.reasons(), ['store_damaged']);
  });

  it('cannot tell the free space (the dir is gone): stays storage_full', async () => {
    const watch = new StorageWatch({ dataDir: join(dir, 'missing'), roomBytesMin: 1 });
    watch.observe(new StoreFullError('full'));
    assert.deepEqual(await watch.reasons(), ['storage_full']);
  });
});
