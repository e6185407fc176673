/**
 * The SQLite store alone, in this process (no HTTP, no store thread): what one event costs it to
 * be inserted (batches of 1,000, synchronous=FULL), claimed (batches of 250) and recorded
 * (batches of 250), as process CPU µs per event (the checkpointer thread included) and as bytes
 * written and read per event (/proc/self/io: the WAL appends and the checkpoints' copies).
 *
 *   node --import tsx bench/store-micro.ts [--n 100000] [--due in-order|interleaved] [--drop idx,...] [--pull]
 *
 * --due in-order: events fall due in the order they were inserted (the fire bench's case), so a
 *   claim batch touches neighbouring rows and index entries.
 * --due interleaved: event i falls due at i mod 1,000 ms, so the events claimed together were
 *   inserted far apart (as in a store where events were scheduled long before they fall due).
 * --drop: drops these indexes first, to see what each costs.
 * --insert-batch: events per insert transaction (1,000; group commit of single requests makes
 *   transactions of about 20).
 * --pull: the events go to a pull destination; they are claimed as a consumer claims them
 *   (eventPullClaim, 100 at a time) and acked (eventPullSettleMany, 100 at a time).
 *
 * Prints one JSON line. Its figures are wall-clock-free but not noise-free on a shared VM: repeat
 * and compare the lowest.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openSqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { EventRecord } from '../src/core/event.ts';
import type { NewEvent } from '../src/store/store.ts';
import { pullDestination } from '../src/store/conformance/fixtures.ts';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '100000' },
    due: { type: 'string', default: 'in-order' },
    drop: { type: 'string', default: '' },
    'insert-batch': { type: 'string', default: '1000' },
    pull: { type: 'boolean', default: false },
  },
});
const n = Number(values.n);
if (!(n >= 1_000) || n % 1_000 !== 0) throw new Error('--n must be a multiple of 1,000');
const insertBatch = Number(values['insert-batch']);
if (!(insertBatch >= 1) || 1_000 % insertBatch !== 0) throw new Error('--insert-batch must divide 1,000');
if (values.due !== 'in-order' && values.due !== 'interleaved') throw new Error('--due is in-order or interleaved');

const dir = mkdtempSync(join(tmpdir(), 'belfry-store-micro-'));
try {
  const store = await openSqliteStore({ dataDir: dir });
  const db = (store as unknown as { db: { exec(sql: string): void } }).db;
  for (const index of values.drop.split(',').filter(Boolean)) db.exec(`DROP INDEX ${index}`);
  const now = Date.now();
  await store.tenantCreate({ id: 't1', name: 't1', settings: {}, createdAt: now });
  if (values.pull) await pullDestination(store, 't1', 'orders');
  const fireAt = (i: number) => (values.due === 'in-order' ? now - n + i : now - 1_000 + (i % 1_000));
  const newEvent = (i: number): NewEvent => ({
    tenantId: 't1',
    id: `e-${i.toString(36).padStart(8, '0')}`,
    shard: i % 64,
    fireAt: fireAt(i),
    destination: { name: 'orders' },
    payload: JSON.stringify({ orderId: i, note: 'x'.repeat(100) }),
    headers: {},
    group: null,
    retry: null,
    expireAt: null,
    tags: {},
    requestHash: `h${i}`,
  });

  const cpuUs = () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  const io = () => {
    const text = readFileSync('/proc/self/io', 'utf8');
    return { w: Number(/wchar: (\d+)/.exec(text)![1]), r: Number(/rchar: (\d+)/.exec(text)![1]) };
  };
  const phases: Record<
    string,
    { cpuUsPerEvent: number; wallUsPerEvent: number; kbWrittenPerEvent: number; kbReadPerEvent: number }
  > = {};
  async function phase(name: string, run: () => Promise<void>): Promise<void> {
    const [c0, io0, t0] = [cpuUs(), io(), performance.now()];
    await run();
    const [c1, io1, t1] = [cpuUs(), io(), performance.now()];
    phases[name] = {
      cpuUsPerEvent: +((c1 - c0) / n).toFixed(1),
      wallUsPerEvent: +(((t1 - t0) * 1_000) / n).toFixed(1),
      kbWrittenPerEvent: +((io1.w - io0.w) / n / 1024).toFixed(2),
      kbReadPerEvent: +((io1.r - io0.r) / n / 1024).toFixed(2),
    };
  }

  const created: EventRecord[] = [];
  await phase('insert', async () => {
    for (let i = 0; i < n; i += insertBatch) {
      const results = await store.eventInsertMany({
        events: Array.from({ length: insertBatch }, (_, k) => newEvent(i + k)),
        now,
      });
      for (const r of results) created.push(r.event);
    }
  });
  if (values.pull) {
    const held: EventRecord[] = [];
    await phase('claim', async () => {
      for (;;) {
        const got = await store.eventPullClaim({
          tenantId: 't1',
          queue: 'name:orders',
          types: null,
          max: 100,
          now,
          leaseUntil: now + 60_000,
          receipt: `r${held.length}`,
        });
        if (got.length === 0) break;
        held.push(...got);
      }
    });
    await phase('ack', async () => {
      for (let i = 0; i < held.length; i += 100) {
        const settles = held.slice(i, i + 100).map((e) => ({
          tenantId: 't1',
          id: e.id,
          receipt: `r${i}`,
          attempts: null,
          action: 'ack' as const,
          to: 'succeeded' as const,
          now,
        }));
        const after = await store.eventPullSettleMany({ settles });
        if (after.some((a) => a === null)) throw new Error('an ack did not apply');
      }
    });
    if (held.length !== n) throw new Error(`claimed ${held.length} of ${n}`);
  } else {
    // Claims go in due order, as the scheduler's do.
    created.sort((a, b) => a.fireAt - b.fireAt);
    const claimed: EventRecord[] = [];
    await phase('claim', async () => {
      for (let i = 0; i < created.length; i += 250) {
        const refs = created.slice(i, i + 250).map((e) => ({ tenantId: e.tenantId, id: e.id, version: e.version }));
        claimed.push(...(await store.eventClaim({ refs, now, owner: 'n1', leaseUntil: now + 60_000 })));
      }
    });
    await phase('outcome', async () => {
      for (let i = 0; i < claimed.length; i += 250) {
        const outcomes = claimed.slice(i, i + 250).map((e) => ({
          tenantId: e.tenantId,
          id: e.id,
          version: e.version,
          owner: 'n1',
          to: 'succeeded' as const,
          status: 200,
          durationMs: 3,
        }));
        await store.eventRecordAttempts({ outcomes, now });
      }
    });
    if (claimed.length !== n) throw new Error(`claimed ${claimed.length} of ${n}`);
  }
  console.log(
    JSON.stringify({ n, due: values.due, insertBatch, pull: values.pull, dropped: values.drop || null, ...phases }),
  );
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
