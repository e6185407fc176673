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

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Specifiers of the statements that load a module at run time (not `import type` / `export type`). */
function valueImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  const re = /^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*'([^']+)'|^\s*import\s*'([^']+)'/gms;
  for (const m of text.matchAll(re)) {
    if (m[5]) out.push(m[5]);
    else if (!m[2]) out.push(m[4]);
  }
  return out;
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
  assert.deepEqual(
    [...seen].map((f) => relative(SRC, f)).sort(),
    ['channels/http/signing.ts', 'client/client.ts', 'client/consumer.ts', 'client/dedup.ts', 'client/index.ts', 'client/routes.ts', 'client/transport.ts', 'client/webhook.ts', 'core/ids.ts'],
  );
  assert.deepEqual([...bare].filter((b) => !b.startsWith('node:')), [], 'no package but Node built-ins');
});
