/**
 * Measures the check a node runs on its SQLite file at start (src/store/sqlite/integrity-check.ts):
 * a store of N events is written, then checked with the node's own function, warm (the file in the
 * page cache) and, as root with MEASURE_COLD=1, cold (the page cache dropped first: `echo 3 >
 * /proc/sys/vm/drop_caches`, which slows every process of the machine for a moment). Not a test;
 * the figures go in src/store/sqlite/integrity-check.ts and docs/operations.md.
 *
 *   node --import tsx bench/measure-quick-check.ts [events, default 2000000]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkIntegrity, QUICK_CHECK_MS_MAX } from '../src/store/sqlite/integrity-check.ts';
import { openSqliteStore, SQLITE_FILE_NAME_DEFAULT } from '../src/store/sqlite/sqlite-store.ts';

const EVENTS = Number(process.argv[2] ?? 2_000_000);
const BATCH = 1_000;
const T0 = Date.UTC(2030, 0, 1);

const dir = mkdtempSync(join(tmpdir(), 'belfry-quick-check-'));
try {
  const fillStartMs = performance.now();
  const store = await openSqliteStore({ dataDir: dir });
  await store.tenantCreate({ id: 't', name: 't', settings: {}, createdAt: T0 });
  for (let b = 0; b < EVENTS; b += BATCH) {
    const events = Array.from({ length: Math.min(BATCH, EVENTS - b) }, (_, i) => ({
      tenantId: 't',
      id: `e${String(b + i).padStart(9, '0')}`,
      shard: (b + i) % 256,
      fireAt: T0 + b + i,
      destination: { name: 'orders' },
      payload: '{"orderId":8812,"note":"a payload of a typical size for a webhook body"}',
      headers: {},
      group: null,
      retry: null,
      expireAt: null,
      tags: {},
      requestHash: String(b + i),
    }));
    await store.eventInsertMany({ events, now: T0 });
  }
  await store.close();
  const file = join(dir, SQLITE_FILE_NAME_DEFAULT);
  const bytes = statSync(file).size;
  console.log(
    JSON.stringify({
      step: 'fill',
      events: EVENTS,
      megabytes: Math.round(bytes / 1e6),
      seconds: +((performance.now() - fillStartMs) / 1_000).toFixed(1),
    }),
  );
  for (const run of ['warm', 'warm'])
    console.log(JSON.stringify({ step: run, ...(await checkIntegrity(file, QUICK_CHECK_MS_MAX * 10)) }));
  if (process.env.MEASURE_COLD === '1') {
    execFileSync('sync');
    writeFileSync('/proc/sys/vm/drop_caches', '3\n');
    console.log(JSON.stringify({ step: 'cold', ...(await checkIntegrity(file, QUICK_CHECK_MS_MAX * 10)) }));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
