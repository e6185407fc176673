#!/usr/bin/env -S node --max-semi-space-size=32
// The `belfry` executable: teaches Node TypeScript through tsx, then hands argv to the CLI. Node's
// flags in the line above are src/node/node-flags.ts's (node-flags.test.ts keeps them the same).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv.slice(2));
