#!/usr/bin/env node
// The `belfry` executable: teaches Node TypeScript through tsx, then hands argv to the CLI.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv.slice(2));
