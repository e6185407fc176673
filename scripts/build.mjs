#!/usr/bin/env node
// `npm run build` (and `prepare`, which `npm install` and `npm ci` run): compiles the SDK
// (packages/client, the workspace @belfry/client: the server imports it) to its dist/, then src/
// to JavaScript in dist/ with tsc (tsconfig.build.json: `.ts` imports become `.js`), then copies
// the files that are not TypeScript (SQL migrations, the dashboard's static files) beside them.
// Both dist/ are made afresh, so a deleted source leaves nothing behind.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const dist = join(root, 'dist');
const tsc = join(root, 'node_modules', '.bin', 'tsc');
const client = join(root, 'packages', 'client');

if (!existsSync(tsc)) {
  // An install without devDependencies (npm install --omit=dev from a clone): nothing to compile
  // with. A published package ships dist/ already built.
  if (existsSync(join(dist, 'cli', 'main.js')) && existsSync(join(client, 'dist', 'index.js'))) process.exit(0);
  console.error('belfry build: TypeScript is not installed (npm install without --omit=dev builds dist/)');
  process.exit(1);
}
rmSync(join(client, 'dist'), { recursive: true, force: true });
const sdk = spawnSync(tsc, ['-p', join(client, 'tsconfig.json')], { stdio: 'inherit' });
if (sdk.status !== 0) process.exit(sdk.status ?? 1);
rmSync(dist, { recursive: true, force: true });
const run = spawnSync(tsc, ['-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
if (run.status !== 0) process.exit(run.status ?? 1);

let assets = 0;
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || entry.name.endsWith('.ts')) continue;
  const from = join(entry.parentPath, entry.name);
  cpSync(from, join(dist, relative(src, from)));
  assets++;
}
console.log(`belfry build: packages/client/dist/ and dist/ compiled (${assets} other files copied)`);
