// The entry of Belfry's worker threads and child processes: teaches Node TypeScript through tsx
// (a thread does not inherit the loader bin/belfry.mjs registers, and on Node 20 tsx's `--import`
// does not register itself in threads), then imports the TypeScript module it is given: a
// thread's workerData.module, or a process's first argument (the rest are that module's).
import { isMainThread, workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
if (isMainThread) {
  const [module] = process.argv.splice(2, 1);
  await import(module);
} else {
  await import(workerData.module);
}
