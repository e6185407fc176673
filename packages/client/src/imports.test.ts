/**
 * `@belfry/client` stands alone: following every import (type-only ones too: the package compiles
 * on its own) from src/index.ts reaches only the package's own files and Node built-ins; nothing of
 * the server, no other package. package.json declares no dependency to match.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { importsOf } from '../../../test/support/layering.ts';

const SRC = dirname(fileURLToPath(import.meta.url));

test('@belfry/client reaches only its own files and node: built-ins', () => {
  const seen = new Set<string>();
  const bare = new Set<string>();
  const queue = [resolve(SRC, 'index.ts')];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const { specifier } of importsOf(readFileSync(file, 'utf8'))) {
      if (specifier.startsWith('.')) queue.push(resolve(dirname(file), specifier));
      else bare.add(specifier);
    }
  }
  assert.deepEqual([...seen].map((f) => relative(SRC, f)).sort(), [
    'batcher.ts',
    'client.ts',
    'consumer.ts',
    'dedup.ts',
    'ids.ts',
    'index.ts',
    'routes.ts',
    'signing.ts',
    'transport.ts',
    'webhook.ts',
    'wire.ts',
  ]);
  assert.deepEqual(
    [...bare].filter((b) => !b.startsWith('node:')),
    [],
    'no package but Node built-ins',
  );
});

test('package.json: no dependency, ESM with types, files from dist only', () => {
  const pkg = JSON.parse(readFileSync(resolve(SRC, '../package.json'), 'utf8'));
  assert.equal(pkg.name, '@belfry/client');
  assert.equal(pkg.type, 'module');
  assert.equal(pkg.license, 'Apache-2.0');
  assert.equal(pkg.dependencies, undefined);
  assert.equal(pkg.peerDependencies, undefined);
  assert.equal(pkg.optionalDependencies, undefined);
  assert.deepEqual(pkg.exports['.'], { types: './dist/index.d.ts', import: './dist/index.js' });
  assert.deepEqual(pkg.files, ['dist/', '!dist/**/*.test.*']);
  const root = JSON.parse(readFileSync(resolve(SRC, '../../../package.json'), 'utf8'));
  assert.equal(pkg.version, root.version, 'the SDK and the server are released together');
  assert.equal(root.dependencies['@belfry/client'], pkg.version, 'the server depends on this very version');
});
