/**
 * A Belfry node for one scenario: a real separate process on a store of its own (SQLite in a
 * fresh temp dir, or a fresh schema of the local PostgreSQL or of another PostgreSQL server, such
 * as a Citus coordinator), with one tenant and its API key.
 *
 * A `BelfryStore` outlives the node processes started on it, so a scenario can stop a node, fill
 * its store behind its back (backlog) and start it again. `dispose()` removes the dir and drops
 * the schema.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNodeProcess, stopNodeProcess } from '../../test/support/process.ts';
import { createClient, type BenchClient } from './http.ts';
import { peakRssBytes, processCpuSeconds } from './machine.ts';
import { pgInstancesCpuSeconds, type PgInstance } from './pg-cpu.ts';
import { belfryPgUrl, dropSchema, freshSchemaName, PG_URL } from './pg.ts';

export const ADMIN_KEY = 'bench-admin-key-0123456789abcdef';
/**
 * Tenant limits lifted for the bench: it measures the node, not the default per-tenant quotas
 * (25,000 scheduling requests/s would cap ingest; 20,000,000 pending would cap nothing here).
 */
const LIMIT_FLAGS = ['--schedule-requests-per-second', '1000000', '--pending-events-max', '1000000000'];

export type StoreKind = 'sqlite' | 'postgres';

/** The server a PostgreSQL store is made on. */
export interface PgServer {
  url: string;
  /** A Citus coordinator: the store's schema is distributed on its workers (`&citus=true`). */
  citus: boolean;
  /** Its PostgreSQL instances, whose CPU the store reports apart (databaseCpuSeconds); none to not. */
  instances: PgInstance[];
}

/** The machine's PostgreSQL, the default server of a PostgreSQL store. */
export const LOCAL_PG: PgServer = { url: PG_URL, citus: false, instances: [] };

export interface BelfryStore {
  kind: StoreKind;
  dataDir: string;
  /** PostgreSQL schema; null on SQLite. */
  schema: string | null;
  /** The server of the schema; null on SQLite. */
  server: PgServer | null;
  /** The node's --store argument. */
  storeArg: string;
  /** Where the SQLite database file is (meaningful on SQLite only). */
  sqliteFile: string;
  /** The tenant made on the first node started on this store. */
  tenant: { id: string; key: string } | null;
  /** CPU seconds so far of each of the server's instances, by name; absent when it lists none. */
  databaseCpuSeconds?: () => Record<string, number>;
  dispose(): Promise<void>;
}

/** A store of `kind`; a PostgreSQL one on `server` (the machine's PostgreSQL by default). */
export async function createBelfryStore(kind: StoreKind, server = LOCAL_PG): Promise<BelfryStore> {
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-bench-'));
  const schema = kind === 'postgres' ? freshSchemaName('belfry') : null;
  const pgServer = schema === null ? null : server;
  return {
    kind,
    dataDir,
    schema,
    server: pgServer,
    storeArg: schema === null ? 'sqlite' : belfryPgUrl(schema, server.url, server.citus),
    sqliteFile: join(dataDir, 'belfry.db'),
    tenant: null,
    databaseCpuSeconds: pgServer?.instances.length ? () => pgInstancesCpuSeconds(pgServer.instances) : undefined,
    async dispose() {
      rmSync(dataDir, { recursive: true, force: true });
      if (schema !== null) await dropSchema(schema, server.url);
    },
  };
}

export interface BenchNode {
  url: string;
  store: BelfryStore;
  /** The tenant's API key. */
  key: string;
  /** A client with `connections` keep-alive connections, authenticated as the tenant. */
  client(connections: number): BenchClient;
  /** Creates (or replaces) a destination; `url` must be a loopback address. */
  /** A webhook at `target` (a URL), or the destination body `target` (a broker). */
  putDestination(name: string, target: string | Record<string, unknown>, maxConcurrency: number): Promise<void>;
  /** A client as client(), authenticated as the tenant of `key` (another tenant of this node). */
  clientFor(key: string, connections: number): BenchClient;
  /** As putDestination, for the tenant of `key`: a webhook at `url`. */
  putDestinationFor(key: string, name: string, url: string, maxConcurrency: number): Promise<void>;
  /** CPU seconds the node process has used so far; NaN where /proc is missing. */
  cpuSeconds(): number;
  /** The node's peak RSS so far (bytes). */
  peakRssBytes(): number;
  /** Warnings and errors the node logged so far: each distinct message with its count. */
  logIssues(): LogIssue[];
  /** Ends the process; the store stays. */
  stop(): Promise<void>;
}

export interface LogIssue {
  level: 'warn' | 'error';
  msg: string;
  count: number;
  /** The first such line's error message, if it had one. */
  err?: string;
}

/** Pino levels 40 (warn) and above in the node's output, grouped by message. */
function logIssues(lines: string[]): LogIssue[] {
  const byMsg = new Map<string, LogIssue>();
  for (const chunk of lines) {
    for (const line of chunk.split('\n')) {
      if (!line.includes('"level":4') && !line.includes('"level":5') && !line.includes('"level":6')) continue;
      let rec: { level?: number; msg?: string; err?: { message?: string } };
      try {
        rec = JSON.parse(line);
      } catch {
        continue;
      }
      if ((rec.level ?? 0) < 40) continue;
      const level = rec.level! >= 50 ? 'error' : 'warn';
      const key = `${level} ${rec.msg}`;
      const seen = byMsg.get(key);
      if (seen) seen.count++;
      else byMsg.set(key, { level, msg: String(rec.msg), count: 1, err: rec.err?.message });
    }
  }
  return [...byMsg.values()];
}

/** A tenant of its own on the node at `url`, with an API key (through the admin API). */
export async function makeTenant(url: string): Promise<{ id: string; key: string }> {
  const admin = createClient(url, ADMIN_KEY, 1);
  try {
    const tenant = await admin.call('POST', '/v1/tenants', { name: 'bench' });
    const created = await admin.call('POST', `/v1/tenants/${tenant.body?.id}/keys`, {});
    if (tenant.status !== 201 || created.status !== 201)
      throw new Error(`tenant setup failed: ${tenant.status} ${created.status}`);
    return { id: tenant.body.id, key: created.body.key };
  } finally {
    await admin.close();
  }
}

async function putDestination(
  client: BenchClient,
  name: string,
  body: Record<string, unknown>,
  maxConcurrency: number,
): Promise<void> {
  const res = await client.call('PUT', `/v1/destinations/${name}`, { ...body, maxConcurrency, timeout: '10s' });
  if (res.status !== 200 && res.status !== 201)
    throw new Error(`PUT destination: ${res.status} ${JSON.stringify(res.body)}`);
}

/** Starts a node on `store`; the first start on a store makes its tenant. */
export async function startBenchNode(store: BelfryStore): Promise<BenchNode> {
  // "info" only because the "listening" line carries the port; request logging is off in the node.
  const args = [
    '--data',
    store.dataDir,
    '--store',
    store.storeArg,
    '--admin-key',
    ADMIN_KEY,
    '--allow-hosts',
    '127.0.0.1',
    '--log-level',
    'info',
    '--shutdown-timeout',
    '5s',
    ...LIMIT_FLAGS,
  ];
  const proc = await startNodeProcess(args);
  try {
    store.tenant ??= await makeTenant(proc.url);
    const key = store.tenant.key;
    const setup = createClient(proc.url, key, 1);
    return {
      url: proc.url,
      store,
      key,
      client: (connections) => createClient(proc.url, key, connections),
      async putDestination(name, target, maxConcurrency) {
        await putDestination(setup, name, typeof target === 'string' ? { url: target } : target, maxConcurrency);
      },
      clientFor: (other, connections) => createClient(proc.url, other, connections),
      async putDestinationFor(other, name, url, maxConcurrency) {
        const client = createClient(proc.url, other, 1);
        try {
          await putDestination(client, name, { url }, maxConcurrency);
        } finally {
          await client.close();
        }
      },
      cpuSeconds: () => processCpuSeconds(proc.child.pid),
      peakRssBytes: () => peakRssBytes(proc.child.pid),
      logIssues: () => logIssues(proc.output),
      async stop() {
        await setup.close();
        await stopNodeProcess(proc);
      },
    };
  } catch (err) {
    await stopNodeProcess(proc);
    throw err;
  }
}
