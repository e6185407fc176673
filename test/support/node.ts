/** Starts a real Belfry node in this process, on a fresh SQLite data dir and a free port, for integration tests. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { DEFAULT_CONFIG, type NodeConfig } from '../../src/node/config.ts';
import { startNode, type BelfryNode, type NodeOptions } from '../../src/node/node.ts';
import { callApi } from './http.ts';

export const ADMIN_KEY = 'test-admin-key-0123456789abcdef';

export interface TestNode {
  node: BelfryNode;
  url: string;
  dataDir: string;
  /** A tenant's API key, created through the admin API. */
  tenantKey: string;
  tenantId: string;
  api(
    method: string,
    path: string,
    body?: unknown,
    key?: string,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /** Stops the node and removes its data dir. */
  close(): Promise<void>;
}

export async function startTestNode(config: Partial<NodeConfig> = {}, opts: NodeOptions = {}): Promise<TestNode> {
  const dataDir = config.dataDir ?? mkdtempSync(join(tmpdir(), 'belfry-it-'));
  const node = await startNode(
    {
      ...DEFAULT_CONFIG,
      port: 0,
      dataDir,
      adminKey: ADMIN_KEY,
      allowHosts: ['127.0.0.1', '::1'],
      shutdownTimeoutMs: 5_000,
      ...config,
    },
    { logger: pino({ level: process.env.BELFRY_TEST_LOG ?? 'silent' }), ...opts },
  );
  const url = node.url;
  const api: TestNode['api'] = (method, path, body, key, headers = {}) =>
    callApi(url, key ?? tenantKey, method, path, body, headers);
  let tenantKey = ADMIN_KEY;
  const tenant = await api('POST', '/v1/tenants', { name: 'test' }, ADMIN_KEY);
  if (tenant.status !== 201) throw new Error(`tenant create failed: ${tenant.status} ${JSON.stringify(tenant.body)}`);
  const key = await api('POST', `/v1/tenants/${tenant.body.id}/keys`, {}, ADMIN_KEY);
  if (key.status !== 201) throw new Error(`key create failed: ${key.status} ${JSON.stringify(key.body)}`);
  tenantKey = key.body.key;
  return {
    node,
    url,
    dataDir,
    tenantKey,
    tenantId: tenant.body.id,
    api,
    async close() {
      await node.stop();
      if (!config.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Resolves when `predicate` returns true, checking every `everyMs`; rejects after `timeoutMs` with `what`. */
export async function waitUntil(
  what: string,
  predicate: () => boolean | Promise<boolean>,
  timeoutMs: number,
  everyMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Nearest-rank percentile of a list of numbers. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
