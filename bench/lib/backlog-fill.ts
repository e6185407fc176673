/**
 * Fills a stopped Belfry store with N pending events straight in SQL, as the node itself would
 * have written them through POST /v1/events/batch: every column is copied from a template event
 * that the node stored through its API, except the id (`bl-00000000`...), the shard
 * (shardOf(tenant, id)), fireAt / dueAt, the payload `{"fireAt":...}` and the request hash
 * (sha256 of the canonical request body). Like the node's inserts, it writes no transition (the
 * `created` one is read from the event row). A self-check compares the first and last rows with
 * what the node's own functions compute.
 *
 * SQLite: one INSERT ... SELECT over a recursive CTE per chunk, with shard and hash as
 * application functions. PostgreSQL: one INSERT ... SELECT per chunk over the chunk's shards
 * (computed here) with ordinality, hashing with sha256() in the server, with the two tables'
 * indexes dropped during the load and built again after it
 * from their own definitions (pg_get_indexdef / pg_get_constraintdef): the same indexes, built
 * in one pass, which PostgreSQL does several times faster than 20,000,000 index insertions.
 * Neither is Belfry's code path, and neither is measured as a Belfry figure.
 */
import { closeSync, fsyncSync, openSync } from 'node:fs';
import { openConnection } from '../../src/store/sqlite/driver.ts';
import pg from 'pg';
import { canonicalJson, sha256Hex } from '../../src/core/ids.ts';
import { shardOf } from '../../src/core/shard.ts';
import type { FillMessage } from './backlog-fill-child.ts';
import { forkTs } from './fork-ts.ts';
import { PG_URL } from './pg.ts';

export const TEMPLATE_ID = 'template';
/** The destination every backlog event names (registered, never called: they are due far ahead). */
export const BACKLOG_DESTINATION = 'far';
const CHUNK = 500_000;

export interface BacklogSpec {
  n: number;
  /** fireAt of event i: firstAt + i * stepMs. */
  firstAt: number;
  stepMs: number;
}

export function backlogId(i: number): string {
  return `bl-${String(i).padStart(8, '0')}`;
}

/** The hash the API stores for the request body that would have created event i. */
export function backlogRequestHash(spec: BacklogSpec, i: number): string {
  const fireAt = spec.firstAt + i * spec.stepMs;
  return sha256Hex(canonicalJson({ id: backlogId(i), fireAt, destination: BACKLOG_DESTINATION, payload: { fireAt } }));
}

interface Row {
  tenant_id: string;
  id: string;
  shard: number | string;
  queue: string;
  payload: string;
  request_hash: string;
  fire_at: number | string;
}

function check(spec: BacklogSpec, rows: Row[], tenantId: string): void {
  for (const i of [0, spec.n - 1]) {
    const row = rows.find((r) => r.id === backlogId(i));
    const fireAt = spec.firstAt + i * spec.stepMs;
    const want = {
      shard: shardOf(tenantId, backlogId(i)),
      hash: backlogRequestHash(spec, i),
      payload: JSON.stringify({ fireAt }),
      fireAt,
      queue: `name:${BACKLOG_DESTINATION}`,
    };
    const got = {
      shard: Number(row?.shard),
      hash: row?.request_hash,
      payload: row?.payload,
      fireAt: Number(row?.fire_at),
      queue: row?.queue,
    };
    if (JSON.stringify(want) !== JSON.stringify(got))
      throw new Error(`backlog row ${i}: expected ${JSON.stringify(want)}, stored ${JSON.stringify(got)}`);
  }
}

/** Drops every index of events and transitions; returns the statements that build them again. */
async function dropIndexes(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{
    tbl: string;
    name: string;
    def: string;
    conname: string | null;
    condef: string | null;
  }>(`
    SELECT i.indrelid::regclass::text AS tbl, i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS def,
           c.conname, pg_get_constraintdef(c.oid) AS condef
    FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid
    WHERE i.indrelid IN ('events'::regclass, 'transitions'::regclass)`);
  const rebuild: string[] = [];
  for (const r of rows) {
    if (r.conname !== null) {
      await client.query(`ALTER TABLE ${r.tbl} DROP CONSTRAINT ${r.conname}`);
      rebuild.push(`ALTER TABLE ${r.tbl} ADD CONSTRAINT ${r.conname} ${r.condef}`);
    } else {
      await client.query(`DROP INDEX ${r.name}`);
      rebuild.push(r.def);
    }
  }
  return rebuild;
}

export function fillSqlite(file: string, spec: BacklogSpec, onProgress: (done: number) => void): void {
  const db = openConnection(file);
  try {
    // Loading only: the node reopens the file with its own settings (WAL, synchronous=FULL).
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF; PRAGMA cache_size = -262144');
    const template = db.prepare('SELECT tenant_id FROM events WHERE id = ?').get(TEMPLATE_ID) as
      | { tenant_id: string }
      | undefined;
    if (!template) throw new Error('backlog: the template event is missing');
    db.function('bench_shard', (tenant, i) => shardOf(String(tenant), backlogId(Number(i))));
    db.function('bench_hash', (i) => backlogRequestHash(spec, Number(i)));
    // Integers bound from JS arrive as REAL: the CTE casts them, so fire_at and the payload text are integral.
    const events =
      db.prepare(`WITH RECURSIVE p(firstAt, stepMs) AS (SELECT CAST(@firstAt AS INTEGER), CAST(@stepMs AS INTEGER)),
        g(i) AS (SELECT CAST(@from AS INTEGER) UNION ALL SELECT i + 1 FROM g WHERE i + 1 < @to)
      INSERT INTO events (tenant_id, id, shard, state, version, fire_at, due_at, destination, payload, headers, grp,
          retry, expire_at, tags, attempts, request_hash, created_at, updated_at, queue, type, pull)
      SELECT t.tenant_id, printf('bl-%08d', g.i), bench_shard(t.tenant_id, g.i), 'scheduled', 1,
          p.firstAt + g.i * p.stepMs, p.firstAt + g.i * p.stepMs, t.destination, '{"fireAt":' || (p.firstAt + g.i * p.stepMs) || '}',
          t.headers, NULL, t.retry, NULL, t.tags, 0, bench_hash(g.i), t.created_at, t.created_at, t.queue, t.type, t.pull
      FROM p, g, (SELECT * FROM events WHERE id = @template) t`);
    const chunk = (from: number, to: number) =>
      db.immediate(() => events.run({ from, to, firstAt: spec.firstAt, stepMs: spec.stepMs, template: TEMPLATE_ID }));
    for (let from = 0; from < spec.n; from += CHUNK) {
      chunk(from, Math.min(spec.n, from + CHUNK));
      onProgress(Math.min(spec.n, from + CHUNK));
    }
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    const rows = db
      .prepare('SELECT * FROM events WHERE tenant_id = ? AND id IN (?, ?)')
      .all(template.tenant_id, backlogId(0), backlogId(spec.n - 1)) as Row[];
    check(spec, rows, template.tenant_id);
  } finally {
    db.close();
  }
  // Loaded with synchronous=OFF, the file's pages would sit dirty in the OS, and the node's first
  // checkpoint (on a write, on its event loop) would pay for flushing all of them: one request
  // stalled 0.7-1 s at 1,000,000 events. The load flushes them itself, as a node's own writes do.
  const fd = openSync(file, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export async function fillPostgres(
  schema: string,
  spec: BacklogSpec,
  onProgress: (done: number) => void,
): Promise<void> {
  const client = new pg.Client({
    connectionString: PG_URL,
    options: `-c search_path=${schema} -c synchronous_commit=off`,
  });
  await client.connect();
  try {
    const template = (
      await client.query<{ tenant_id: string }>('SELECT tenant_id FROM events WHERE id = $1', [TEMPLATE_ID])
    ).rows[0];
    if (!template) throw new Error('backlog: the template event is missing');
    const fireAt = `($3::bigint + (k - 1 + $2::bigint) * $4::bigint)`;
    const id = `('bl-' || lpad((k - 1 + $2::bigint)::text, 8, '0'))`;
    const hashed = `'{"destination":"${BACKLOG_DESTINATION}","fireAt":' || ${fireAt} || ',"id":"' || ${id} || '","payload":{"fireAt":' || ${fireAt} || '}}'`;
    const sql = `INSERT INTO events (tenant_id, id, shard, state, version, fire_at, due_at, destination, payload, headers, grp,
            retry, expire_at, tags, attempts, request_hash, created_at, updated_at, queue, type, pull)
        SELECT t.tenant_id, ${id}, s.shard, 'scheduled', 1, ${fireAt}, ${fireAt}, t.destination,
            '{"fireAt":' || ${fireAt} || '}', t.headers, NULL, t.retry, NULL, t.tags, 0,
            encode(sha256(convert_to(${hashed}, 'UTF8')), 'hex'), t.created_at, t.created_at, t.queue, t.type, t.pull
        FROM unnest($1::int[]) WITH ORDINALITY AS s(shard, k), (SELECT * FROM events WHERE id = $5) t`;
    const rebuild = await dropIndexes(client);
    for (let from = 0; from < spec.n; from += CHUNK) {
      const to = Math.min(spec.n, from + CHUNK);
      const shards = Array.from({ length: to - from }, (_, k) => shardOf(template.tenant_id, backlogId(from + k)));
      await client.query(sql, [shards, from, spec.firstAt, spec.stepMs, TEMPLATE_ID]);
      onProgress(to);
    }
    await client.query("SET maintenance_work_mem = '512MB'");
    let phaseMs = performance.now();
    const phase = (what: string) => {
      console.error(`[bench] backlog · postgres: ${what} in ${((performance.now() - phaseMs) / 1000).toFixed(0)} s`);
      phaseMs = performance.now();
    };
    for (const statement of rebuild) await client.query(statement);
    phase('indexes built');
    // A settled table, as autovacuum leaves it: statistics and the visibility map.
    await client.query('VACUUM (ANALYZE) events');
    phase('events vacuumed');
    await client.query('VACUUM (ANALYZE) transitions');
    phase('transitions vacuumed');
    // And the load's WAL checkpointed, as it would be long before a month-ahead backlog comes due:
    // otherwise the checkpoints the load forces (several GB of WAL) land in the measured phases,
    // and the full-page writes after each stall every writer for seconds.
    await client.query('CHECKPOINT');
    phase('checkpointed');
    const rows = (
      await client.query<Row>('SELECT * FROM events WHERE id = ANY($1)', [[backlogId(0), backlogId(spec.n - 1)]])
    ).rows;
    check(spec, rows, template.tenant_id);
  } finally {
    await client.end();
  }
}

/** fillSqlite in a child process (backlog-fill-child.ts): the caller's event loop stays free. */
export function fillSqliteInChild(file: string, spec: BacklogSpec, onProgress: (done: number) => void): Promise<void> {
  const child = forkTs(new URL('./backlog-fill-child.ts', import.meta.url));
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      if (err) {
        child.kill('SIGKILL');
        reject(err);
      } else {
        if (child.connected) child.disconnect();
        resolve();
      }
    };
    child.on('message', (msg: FillMessage) => {
      if (msg.type === 'progress') onProgress(msg.done);
      else settle(msg.type === 'done' ? null : new Error(`SQLite backlog fill: ${msg.message}`));
    });
    child.once('error', (err) => settle(err));
    child.once('exit', (code) =>
      settle(new Error(`SQLite backlog fill: the child exited (code ${code}) before it finished`)),
    );
    child.send({ file, spec });
  });
}
