/** Belfry as a System: a node process on a fresh store, scheduled through its HTTP API. */
import type { BenchClient } from '../lib/http.ts';
import {
  createBelfryStore,
  LOCAL_PG,
  startBenchNode,
  type BenchNode,
  type PgServer,
  type StoreKind,
} from '../lib/node.ts';
import { postBatch } from '../lib/schedule.ts';
import type { BenchEvent, System, SystemOptions } from './system.ts';

/** The destination's concurrency: connections to the receiver. The peers' workers get the same or their docs' figure. */
export const BELFRY_MAX_CONCURRENCY = 256;
/** A port nothing listens on: ingest scenarios schedule events due long after they end. */
export const NOWHERE_URL = 'http://127.0.0.1:9/';

/** The create body of a bench event as every Belfry step sends it: the due time in the payload too. */
export function belfryEventBody(e: BenchEvent, destination: string) {
  return { id: e.id, fireAt: e.fireAt, destination, payload: { fireAt: e.fireAt } };
}

async function scheduleOne(client: BenchClient, body: object): Promise<void> {
  const res = await client.call('POST', '/v1/events', JSON.stringify(body));
  if (res.status !== 201 && res.status !== 200)
    throw new Error(`HTTP ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
}

/**
 * A System over a running node whose events go to `destination` (already registered). `stop`
 * closes the client and then runs `onStop` (stopping the node, removing the store, or neither).
 */
export function belfryOnNode(
  node: BenchNode,
  destination: string,
  connections: number,
  onStop: () => Promise<void>,
): System {
  const kind = node.store.kind;
  const client = node.client(connections);
  const body = (e: BenchEvent) => belfryEventBody(e, destination);
  return {
    info: {
      // On Citus too: Belfry's PostgreSQL store, which it distributes.
      key: kind === 'sqlite' ? 'belfry-sqlite' : 'belfry-postgres',
      label:
        kind === 'sqlite' ? 'Belfry · SQLite' : node.store.server?.citus ? 'Belfry · Citus' : 'Belfry · PostgreSQL',
      settings: `one node process, defaults (lookahead 3s, PostgreSQL pool 10); destination maxConcurrency ${BELFRY_MAX_CONCURRENCY}; HTTP API, batches of 1,000`,
    },
    scheduleBatch: (events, tally) => postBatch(client, JSON.stringify({ events: events.map(body) }), tally),
    scheduleBatchMinimal: (events, tally) =>
      postBatch(client, JSON.stringify({ events: events.map(body) }), tally, { prefer: 'return=minimal' }),
    scheduleOne: (e) => scheduleOne(client, body(e)),
    cpuSeconds: () => node.cpuSeconds(),
    databaseCpuSeconds: node.store.databaseCpuSeconds,
    peakRssBytes: () => node.peakRssBytes(),
    logIssues: () => node.logIssues(),
    async stop() {
      await client.close();
      await onStop();
    },
  };
}

/** Belfry on a fresh store of `kind` (a PostgreSQL one on `server`), its destination "rx" to the receiver. */
export async function startBelfry(kind: StoreKind, opts: SystemOptions, server: PgServer = LOCAL_PG): Promise<System> {
  const store = await createBelfryStore(kind, server);
  let node: BenchNode | undefined;
  try {
    node = await startBenchNode(store);
    await node.putDestination(
      'rx',
      opts.destination ?? opts.receiverUrl ?? NOWHERE_URL,
      opts.maxConcurrency ?? BELFRY_MAX_CONCURRENCY,
    );
  } catch (err) {
    await node?.stop();
    await store.dispose();
    throw err;
  }
  const running = node;
  const system = belfryOnNode(running, 'rx', opts.connections, async () => {
    await running.stop();
    await store.dispose();
  });
  if (opts.maxConcurrency !== undefined)
    system.info.settings = system.info.settings.replace(
      `maxConcurrency ${BELFRY_MAX_CONCURRENCY}`,
      `maxConcurrency ${opts.maxConcurrency}`,
    );
  return system;
}
