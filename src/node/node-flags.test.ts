import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { NODE_FLAGS } from './node-flags.ts';

const root = new URL('../../', import.meta.url);

test('bin/belfry.mjs and npm start run Node with NODE_FLAGS, and Node takes them', () => {
  const shebang = readFileSync(new URL('bin/belfry.mjs', root), 'utf8').split('\n')[0];
  assert.equal(shebang, `#!/usr/bin/env -S node ${NODE_FLAGS.join(' ')}`);
  const start = (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { scripts: { start: string } }).scripts.start;
  assert.equal(start, `node ${NODE_FLAGS.join(' ')} bin/belfry.mjs start`);
  // Node takes them: the heap's limit grows by the larger young generation.
  const limit = (flags: readonly string[]) => {
    const run = spawnSync(process.execPath, [...flags, '-e', "console.log(require('v8').getHeapStatistics().heap_size_limit)"], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    return Number(run.stdout);
  };
  const [withFlags, without] = [limit(NODE_FLAGS), limit([])];
  assert.ok(withFlags > without, `heap limit ${withFlags} with the flags, ${without} without`);
});
