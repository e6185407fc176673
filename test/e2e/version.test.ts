/**
 * The version a user and an operator see, from real processes: `belfry --version` and `-v`, and a
 * running node's /healthz, /metrics (belfry_build_info) and `listening` line, each equal to the
 * version in package.json.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { scrapeMetrics } from '../support/metrics.ts';
import { PACKAGE_VERSION } from '../support/package.ts';
import { BIN, startNodeProcess, stopNodeProcess } from '../support/process.ts';

const CLI_RUN_MS_MAX = 30_000;

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { timeout: CLI_RUN_MS_MAX, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') return reject(error);
        resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
      },
    );
  });
}

describe('the version', { timeout: 90_000 }, () => {
  it('belfry --version and -v print the version of package.json and exit 0', async () => {
    assert.match(PACKAGE_VERSION, /^\d+\.\d+\.\d+/);
    for (const flag of ['--version', '-v']) {
      const result = await cli([flag]);
      assert.equal(result.code, 0, `${flag}: ${result.stderr}`);
      assert.equal(result.stdout, `${PACKAGE_VERSION}\n`, flag);
      assert.equal(result.stderr, '', flag);
    }
  });

  it('a node shows it on /healthz, in belfry_build_info (with Node.js and the store) and in its listening line', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'belfry-version-'));
    const node = await startNodeProcess(['--data', dataDir, '--admin-key', 'version-test-admin-key']);
    try {
      const health = await (await fetch(`${node.url}/healthz`)).json();
      assert.deepEqual(health, { status: 'ok', version: PACKAGE_VERSION });
      const samples = await scrapeMetrics(node.url);
      const build = [...samples].filter(([name]) => name.startsWith('belfry_build_info'));
      assert.deepEqual(build, [
        [`belfry_build_info{version="${PACKAGE_VERSION}",node="${process.version}",store="sqlite"}`, 1],
      ]);
      const listening = node.output.map((l) => l.trim()).find((l) => l.includes('"msg":"listening"'));
      assert.ok(listening, node.output.join(''));
      assert.equal(JSON.parse(listening).version, PACKAGE_VERSION);
      const openapi = (await (await fetch(`${node.url}/openapi.json`)).json()) as { info: { version: string } };
      assert.equal(openapi.info.version, PACKAGE_VERSION);
    } finally {
      const { code } = await stopNodeProcess(node);
      await rm(dataDir, { recursive: true, force: true });
      assert.equal(code, 0, node.output.join('').slice(-2000));
    }
  });
});
