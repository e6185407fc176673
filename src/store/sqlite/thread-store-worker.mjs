// The SQLite store's own thread (see thread-store.ts): opens the store (lock, migrations) and runs
// every call it is sent, in the order sent, replying once per batch of calls. Plain JavaScript
// that loads the TypeScript store through tsx: a worker does not inherit the loader the CLI
// registers.
//
// workerData: { options: SqliteStoreOptions }.
// First message out: { ready: true, capabilities, filePath, integrity } or { ready: false, error }.
// Then messages in: Call[]; out: Reply[]. Besides the Store methods, INSERT_ROWS (thread-wire.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const { openSqliteStore } = await import('./sqlite-store.ts');
const { errorToWire } = await import('./thread-wire.ts');

let store;
try {
  store = await openSqliteStore(workerData.options);
} catch (err) {
  parentPort.postMessage({ ready: false, error: errorToWire(err) });
  process.exit(0);
}
parentPort.postMessage({ ready: true, capabilities: store.capabilities, filePath: store.filePath, integrity: store.integrity });

parentPort.on('message', async (calls) => {
  const replies = [];
  for (const { id, method, args } of calls) {
    try {
      const result = await store[method](...args);
      replies.push({ id, result });
    } catch (err) {
      replies.push({ id, error: errorToWire(err) });
    }
  }
  parentPort.postMessage(replies);
});
