/**
 * `belfry/client` loads no server code: following its value imports (type-only imports are erased
 * and load nothing) from src/client/index.ts reaches only the client's own files, Belfry's pure id
 * and signing functions, and Node built-ins; no Fastify, no database driver, no store or API module.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { importsOf } from '../../test/support/layering.ts';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Specifiers of the imports that load a module at run time (not type-only ones). */
function valueImports(file: string): string[] {
  return importsOf(readFileSync(file, 'utf8'))
    .filter((i) => !i.typeOnly)
    .map((i) => i.specifier);
}

test('belfry/client reaches only its own files, core/ids, the signer and node: built-ins', () => {
  const seen = new Set<string>();
  const bare = new Set<string>();
  const queue = [resolve(SRC, 'client/index.ts')];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of valueImports(file)) {
      if (spec.startsWith('.')) queue.push(resolve(dirname(file), spec));
      else bare.add(spec);
    }
  }
  assert.deepEqual([...seen].map((f) => relative(SRC, f)).sort(), [
    'channels/http/signing.ts',
    'client/client.ts',
    'client/consumer.ts',
    'client/dedup.ts',
    'client/index.ts',
    'client/routes.ts',
    'client/transport.ts',
    'client/webhook.ts',
    'core/ids.ts',
  ]);
  assert.deepEqual(
    [...bare].filter((b) => !b.startsWith('node:')),
    [],
    'no package but Node built-ins',
  );
});
