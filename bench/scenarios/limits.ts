/**
 * limits: what this machine can do at all, measured in the same run, so each Belfry figure can be
 * read as a fraction of it:
 *   - loopback HTTP POST rate: the bench process (undici, 256 keep-alive connections, as a node's
 *     destination) POSTs small JSON bodies to the same receiver process the scenarios use;
 *   - SQLite raw insert rate: rows of an event's size into a table with only a primary key, 1,000
 *     per transaction, WAL with synchronous=FULL (Belfry's durability), the store's SQLite driver;
 *   - PostgreSQL raw insert rate: the same rows, 1,000 per INSERT ... SELECT FROM unnest(...),
 *     4 statements in flight (as the batch ingest), default synchronous_commit (durable);
 *   - single-event requests to a JSON API that does nothing (lib/null-api-child.ts: Fastify, the
 *     body parsed, Belfry's 201 body answered, nothing stored), from the ingest scenario's client
 *     and its 64 concurrent callers: the most any HTTP API can take one event at a time here,
 *     beside which the ingest target "single requests ≥ the best peer's single add" is read.
 */
import { openConnection } from '../../src/store/sqlite/driver.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Pool } from 'undici';
import { firstMessage, forkTs } from '../lib/fork-ts.ts';
import { belfryEventBody } from '../systems/belfry.ts';
import { createClient, runConcurrently } from '../lib/http.ts';
import { serviceCpu, serviceCpuSince } from '../lib/machine.ts';
import { dropSchema, freshSchemaName, PG_URL } from '../lib/pg.ts';
import { startReceiverProcess } from '../lib/receiver-process.ts';
import type { Metric, ScenarioResult } from '../lib/report.ts';
import { perSecond } from '../lib/stats.ts';

/**
 * Bytes of one stored event row and its "created" transition, measured on Belfry's PostgreSQL
 * store (pg_column_size of a row as the bench schedules it, ~270 + ~70): the raw rows carry a
 * body of this many bytes, so they are as large as what Belfry writes per event.
 */
export const EVENT_ROW_BYTES = 340;
const HTTP_POSTS = 100_000;
const HTTP_CONNECTIONS = 256;
const SQLITE_ROWS = 500_000;
const PG_ROWS = 300_000;
const ROWS_PER_COMMIT = 1_000;
const PG_IN_FLIGHT = 4;
const NULL_API_REQUESTS = 50_000;
/** As the ingest scenario's single phase. */
const NULL_API_CLIENTS = 64;
const NULL_API_START_MS_MAX = 15_000;

const BODY = 'x'.repeat(EVENT_ROW_BYTES - 16);

async function httpPostRate(): Promise<Metric[]> {
  const rx = await startReceiverProcess();
  const pool = new Pool(rx.url, { connections: HTTP_CONNECTIONS, pipelining: 1 });
  const post = async (i: number) => {
    const res = await pool.request({
      method: 'POST',
      path: '/',
      headers: { 'content-type': 'application/json', 'webhook-id': `h${i}` },
      body: JSON.stringify({ id: `h${i}`, fireAt: Date.now() }),
    });
    await res.body.dump();
  };
  try {
    await runConcurrently(5_000, HTTP_CONNECTIONS, (i) => post(-i - 1)); // warm-up: connections, JIT
    const startedMs = performance.now();
    await runConcurrently(HTTP_POSTS, HTTP_CONNECTIONS, post);
    const elapsedMs = performance.now() - startedMs;
    const { distinct } = await rx.count();
    return [
      { name: 'loopback HTTP POSTs/s', value: perSecond(HTTP_POSTS, elapsedMs), unit: '/s' },
      { name: 'HTTP POSTs received', value: distinct, unit: '' },
    ];
  } finally {
    await pool.close();
    await rx.close();
  }
}

async function nullApiSingleRate(): Promise<Metric> {
  const child = forkTs(new URL('../lib/null-api-child.ts', import.meta.url));
  try {
    const { port } = await firstMessage<{ port: number }>(child, 'the do-nothing API', NULL_API_START_MS_MAX);
    const client = createClient(`http://127.0.0.1:${port}`, 'none', NULL_API_CLIENTS);
    const dueAt = Date.now() + 86_400_000;
    const create = async (i: number) => {
      const res = await client.call(
        'POST',
        '/v1/events',
        JSON.stringify(belfryEventBody({ id: `n${i}`, fireAt: dueAt + i }, 'bench')),
      );
      if (res.status !== 201) throw new Error(`do-nothing API: HTTP ${res.status}`);
    };
    try {
      await runConcurrently(5_000, NULL_API_CLIENTS, (i) => create(-i - 1)); // warm-up: connections, JIT
      const startedMs = performance.now();
      await runConcurrently(NULL_API_REQUESTS, NULL_API_CLIENTS, create);
      return {
        name: 'do-nothing JSON API, single creates/s',
        value: perSecond(NULL_API_REQUESTS, performance.now() - startedMs),
        unit: '/s',
      };
    } finally {
      await client.close();
    }
  } finally {
    child.kill();
  }
}

function sqliteInsertRate(): Metric {
  const dir = mkdtempSync(join(tmpdir(), 'belfry-bench-raw-'));
  const db = openConnection(join(dir, 'raw.db'));
  try {
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL');
    db.exec('CREATE TABLE raw (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
    const insert = db.prepare('INSERT INTO raw (id, body) VALUES (?, ?)');
    const commit = (from: number) =>
      db.immediate(() => {
        for (let i = from; i < from + ROWS_PER_COMMIT; i++) insert.run(i, BODY);
      });
    const startedMs = performance.now();
    for (let from = 0; from < SQLITE_ROWS; from += ROWS_PER_COMMIT) commit(from);
    return { name: 'SQLite raw inserts/s', value: perSecond(SQLITE_ROWS, performance.now() - startedMs), unit: '/s' };
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function pgInsertRate(): Promise<Metric[]> {
  const schema = freshSchemaName('raw');
  const pool = new pg.Pool({ connectionString: PG_URL, max: PG_IN_FLIGHT, options: `-c search_path=${schema}` });
  try {
    await pool.query(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.raw (id bigint PRIMARY KEY, body text NOT NULL)`);
    const bodies = new Array<string>(ROWS_PER_COMMIT).fill(BODY);
    const statement = async (b: number) => {
      const ids = Array.from({ length: ROWS_PER_COMMIT }, (_, i) => b * ROWS_PER_COMMIT + i);
      await pool.query({
        name: 'raw',
        text: 'INSERT INTO raw (id, body) SELECT * FROM unnest($1::bigint[], $2::text[])',
        values: [ids, bodies],
      });
    };
    await runConcurrently(10, PG_IN_FLIGHT, (b) => statement(-b - 1)); // warm-up
    const dbStart = serviceCpu();
    const startedMs = performance.now();
    await runConcurrently(PG_ROWS / ROWS_PER_COMMIT, PG_IN_FLIGHT, statement);
    const elapsedMs = performance.now() - startedMs;
    return [
      { name: 'PostgreSQL raw inserts/s', value: perSecond(PG_ROWS, elapsedMs), unit: '/s' },
      {
        name: 'PostgreSQL raw insert: database CPU',
        value: (serviceCpuSince(dbStart) * 100_000) / elapsedMs,
        unit: '% of a core',
      },
    ];
  } finally {
    await pool.end();
    await dropSchema(schema);
  }
}

export async function limits(): Promise<ScenarioResult[]> {
  const metrics = [...(await httpPostRate()), await nullApiSingleRate(), sqliteInsertRate(), ...(await pgInsertRate())];
  return [
    {
      label: 'limits · this machine',
      scenario: 'limits',
      system: 'machine',
      options: {
        httpPosts: HTTP_POSTS,
        httpConnections: HTTP_CONNECTIONS,
        sqliteRows: SQLITE_ROWS,
        pgRows: PG_ROWS,
        rowsPerCommit: ROWS_PER_COMMIT,
        rowBytes: EVENT_ROW_BYTES,
        pgInFlight: PG_IN_FLIGHT,
        nullApiRequests: NULL_API_REQUESTS,
        nullApiClients: NULL_API_CLIENTS,
      },
      metrics,
      details: {},
    },
  ];
}
