/**
 * Due wake-ups on a real PostgreSQL: announced refs reach every subscriber (split over as many
 * notifications as they need, each under PostgreSQL's payload limit), of this schema only; a
 * subscriber whose connection is killed reconnects by itself; payloads that are not ours are ignored.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import type { DueRef } from '../store.ts';
import { waitUntil as until } from '../../../test/support/node.ts';
import { TEST_PG_URL as PG_URL } from '../../../test/support/pg.ts';
import { createPool } from './db.ts';
import { dueChannel, duePayloads, PAYLOAD_CHARS_MAX, PostgresDueWakeups, refsOfPayload } from './wakeups.ts';

function refs(n: number, tenantId = 't_1'): DueRef[] {
  return Array.from({ length: n }, (_, i) => ({
    tenantId,
    id: `evt-${i}-${'x'.repeat(40)}`,
    version: 1 + (i % 3),
    dueAt: 1_790_000_000_000 + i,
    shard: i % 256,
    group: i % 2 ? `g${i}` : null,
    queue: 'name:orders',
  }));
}

describe('due wake-up payloads', () => {
  it('round-trip, split under the payload limit', () => {
    const all = refs(500);
    const payloads = duePayloads(all);
    assert.ok(payloads.length > 1);
    assert.ok(payloads.every((p) => p.length <= PAYLOAD_CHARS_MAX));
    assert.deepEqual(payloads.flatMap(refsOfPayload), all);
  });

  it('ignores what is not a ref list', () => {
    assert.deepEqual(refsOfPayload('not json'), []);
    assert.deepEqual(refsOfPayload('{"a":1}'), []);
    assert.deepEqual(refsOfPayload('[["t","id","x",1,2,null,"q"],[1,2]]'), []);
  });

  it('names one channel per schema, a valid identifier', () => {
    assert.notEqual(dueChannel('a'), dueChannel('b'));
    assert.match(dueChannel('x'.repeat(63)), /^[a-z_][a-z0-9_]{0,62}$/);
  });
});

describe('due wake-ups on PostgreSQL', () => {
  const schema = `belfry_wake_${randomBytes(4).toString('hex')}`;
  let pool: pg.Pool;
  before(() => {
    pool = createPool({ url: PG_URL, schema, size: 2, onError: () => {} });
  });
  after(() => pool.end());

  it('reaches every subscriber of the schema, and only of it', async () => {
    const received: DueRef[][] = [[], []];
    const other: DueRef[] = [];
    const wakeups = new PostgresDueWakeups(pool, PG_URL, schema);
    const subs = await Promise.all(
      received.map((into) =>
        wakeups.subscribe(
          (r) => into.push(...r),
          () => {},
        ),
      ),
    );
    const otherSub = await new PostgresDueWakeups(pool, PG_URL, `${schema}_other`).subscribe(
      (r) => other.push(...r),
      () => {},
    );
    try {
      const sent = refs(300);
      await wakeups.announce(sent);
      await until('both subscribers hear all', () => received.every((r) => r.length >= sent.length), 5_000);
      for (const r of received) assert.deepEqual(r, sent);
      assert.equal(other.length, 0, 'another schema hears nothing');
    } finally {
      for (const s of [...subs, otherSub]) await s.close();
    }
  });

  it('reconnects after its connection is killed, and stops when closed', async () => {
    const received: DueRef[] = [];
    const errors: Error[] = [];
    const wakeups = new PostgresDueWakeups(pool, PG_URL, schema);
    const sub = await wakeups.subscribe(
      (r) => received.push(...r),
      (err) => errors.push(err),
    );
    try {
      const killed = await pool.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN ${dueChannel(schema)}'`,
      );
      assert.equal(killed.rowCount, 1);
      await until('the loss is reported', () => errors.length > 0, 5_000);
      // Announce until the new connection hears one (it reconnects after 250 ms).
      await until(
        'heard again after reconnecting',
        () => {
          void wakeups.announce(refs(1));
          return received.length > 0;
        },
        10_000,
      );
    } finally {
      await sub.close();
    }
    await until(
      'closed: no LISTEN connection left',
      async () =>
        (
          await pool.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = 'LISTEN ${dueChannel(schema)}'`,
          )
        ).rows[0].n === 0,
      5_000,
    );
  });
});
