#!/usr/bin/env node
// The `belfry` executable: the compiled CLI in dist/ (`npm run build`, which `npm install` runs).
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  console.error('belfry: dist/ is not built; run `npm run build` (npm install and npm ci run it)');
  process.exit(1);
}
const { main } = await import(entry.href);
await main(process.argv.slice(2));
