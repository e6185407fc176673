/**
 * A Belfry node for one scenario: a real separate process on SQLite in a fresh temp dir, with one
 * tenant and its API key. `stop()` ends the process and removes the dir.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNodeProcess, stopNodeProcess } from '../../test/support/process.ts';
import { createClient, type BenchClient } from './http.ts';
import { processCpuSeconds } from './machine.ts';
import type { Metric } from './report.ts';

const ADMIN_KEY = 'bench-admin-key-0123456789abcdef';

export interface BenchNode {
  url: string;
  /** The tenant's API key. */
  key: string;
  /** A client with `connections` keep-alive connections, authenticated as the tenant. */
  client(connections: number): BenchClient;
  /** Creates (or replaces) a destination; `url` must be a loopback address. */
  putDestination(name: string, url: string, maxConcurrency: number): Promise<void>;
  /** CPU seconds the node process has used so far; NaN where /proc is missing. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

export async function startBenchNode(store: string): Promise<BenchNode> {
  if (store !== 'sqlite') throw new Error(`--store ${store}: only sqlite is built`);
  const dataDir = mkdtempSync(join(tmpdir(), 'belfry-bench-'));
  // "info" only because the "listening" line carries the port; request logging is off in the node.
  const args = ['--data', dataDir, '--admin-key', ADMIN_KEY, '--allow-hosts', '127.0.0.1', '--log-level', 'info', '--shutdown-timeout', '5s'];
  const proc = await startNodeProcess(args).catch((err: unknown) => {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  const stop = async () => {
    await stopNodeProcess(proc);
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const admin = createClient(proc.url, ADMIN_KEY, 1);
    const tenant = await admin.call('POST', '/v1/tenants', { name: 'bench' });
    const created = await admin.call('POST', `/v1/tenants/${tenant.body?.id}/keys`, {});
    await admin.close();
    if (tenant.status !== 201 || created.status !== 201) throw new Error(`tenant setup failed: ${tenant.status} ${created.status}`);
    const key: string = created.body.key;
    const setup = createClient(proc.url, key, 1);
    return {
      url: proc.url,
      key,
      client: (connections) => createClient(proc.url, key, connections),
      async putDestination(name, url, maxConcurrency) {
        const res = await setup.call('PUT', `/v1/destinations/${name}`, { url, maxConcurrency, timeout: '10s' });
        if (res.status !== 200 && res.status !== 201) throw new Error(`PUT destination: ${res.status} ${JSON.stringify(res.body)}`);
      },
      cpuSeconds: () => processCpuSeconds(proc.child.pid),
      async stop() {
        await setup.close();
        await stop();
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The node's CPU use over a window, in % of one core. */
export function nodeCpuMetric(cpuSeconds: number, elapsedMs: number): Metric {
  return { name: 'node CPU', value: elapsedMs > 0 ? (cpuSeconds * 100_000) / elapsedMs : NaN, unit: '% of a core' };
}
