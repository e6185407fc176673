// The entry of Belfry's worker threads and child processes when the TypeScript sources run
// through tsx (the tests, benchmarks and simulation; the compiled `belfry` starts its workers'
// JavaScript directly, see startWorker in src/core/thread-rpc.ts). It registers tsx (a thread does
// not inherit a loader the process registered), then imports the TypeScript module it is given: a
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
