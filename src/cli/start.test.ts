/**
 * `belfry start --help` lists every setting the node reads, with its environment variable, config
 * file key and default, and the README's configuration table names the same settings.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { resolveConfig, SETTING_NAMES } from '../node/config.ts';
import { START_USAGE } from './start.ts';

/** The option lines of the help: `  --flag <arg>` at the start of a line. */
function helpFlags(usage: string): string[] {
  return [...usage.matchAll(/^ {2}--([a-z0-9-]+)/gm)].map((m) => m[1]);
}

describe('belfry start --help', () => {
  it('lists every setting once, with its environment variable, file key and a default', () => {
    assert.ok(SETTING_NAMES.length >= 29, `${SETTING_NAMES.length} settings`);
    const lines = START_USAGE.split('\n');
    for (const { flag, env, fileKey } of SETTING_NAMES) {
      const at = lines.findIndex((l) => l.startsWith(`  --${flag} `));
      assert.ok(at >= 0, `--${flag} is not in the help:\n${START_USAGE}`);
      const names = lines[at + 1] ?? '';
      assert.ok(names.includes(`env ${env} `), `--${flag}: ${names}`);
      assert.ok(names.includes(`file key ${fileKey} `), `--${flag}: ${names}`);
      assert.match(names, / · default \S/, `--${flag}: ${names}`);
    }
    assert.deepEqual(helpFlags(START_USAGE), ['config', ...SETTING_NAMES.map((s) => s.flag)]);
  });

  it('shows the defaults the node uses', () => {
    const defaults = resolveConfig([], {});
    const line = (flag: string) =>
      START_USAGE.split('\n')[START_USAGE.split('\n').findIndex((l) => l.startsWith(`  --${flag} `)) + 1];
    assert.match(line('port'), new RegExp(`default ${defaults.port}$`));
    assert.match(line('lookahead'), /default 3s$/);
    assert.equal(defaults.lookaheadMs, 3_000);
    assert.match(line('retention-archived'), /default 30d$/);
    assert.match(line('allow-hosts'), /default none$/);
  });

  it("names the same settings as the README's configuration table (flag, env and file key)", () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Configuration'), readme.indexOf('\n## Dashboard'));
    const rows = [...section.matchAll(/^\| `--([a-z0-9-]+)` \| `([A-Z0-9_]+)` \| `([A-Za-z0-9]+)` \|/gm)].map((m) => ({
      flag: m[1],
      env: m[2],
      fileKey: m[3],
    }));
    const byFlag = (a: { flag: string }, b: { flag: string }) => a.flag.localeCompare(b.flag);
    assert.deepEqual([...rows].sort(byFlag), [...SETTING_NAMES].sort(byFlag));
  });
});
