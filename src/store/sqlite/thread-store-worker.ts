/**
 * The SQLite store's own thread (see thread-store.ts): `open` opens the store (lock, migrations);
 * then every call runs on it, in the order sent (but for small claims, which go first: see
 * FIRST_CLAIM_EVENTS_MAX), the replies of one batch of calls in one message (core/thread-rpc.ts,
 * sequential). The protocol is StoreThreadProtocol (thread-wire.ts). An
 * error crosses with its SQLite code name in `code` (driver.ts withSqliteCode), whichever driver
 * raised it.
 */
import { serveRpc, type Handlers } from '../../core/thread-rpc.ts';
import { STORE_PART_METHODS } from '../core/compose.ts';
import { withSqliteCode } from './driver.ts';
import { INSERT_ROWS, type StoreThreadProtocol } from './thread-wire.ts';
import { openSqliteStore, type SqliteStore } from './sqlite-store.ts';

let store: SqliteStore | null = null;

function opened(): SqliteStore {
  if (!store) throw new Error('sqlite store thread: the store is not open');
  return store;
}

type Own = 'open' | typeof INSERT_ROWS | 'close';

const own: Pick<Handlers<StoreThreadProtocol>, Own> = {
  async open(options) {
    if (store) throw new Error('sqlite store thread: the store is open already');
    store = await openSqliteStore(options);
    return { capabilities: store.capabilities, filePath: store.filePath, integrity: store.integrity };
  },
  [INSERT_ROWS]: (rows, now) => opened().eventInsertRows(rows, now),
  close: () => opened().close(),
};

/** Every method of every part (core/compose.ts's lists, as the caller's proxy sends them) and the lifecycle's, run by the store as it is. */
const forwarded = Object.fromEntries(
  [
    ...Object.values(STORE_PART_METHODS)
      .flat()
      .filter((m) => m !== 'eventInsertMany'),
    'migrate',
    'ping',
  ].map((method) => [
    method,
    (...args: unknown[]) => (opened() as unknown as Record<string, (...a: unknown[]) => unknown>)[method](...args),
  ]),
) as Omit<Handlers<StoreThreadProtocol>, Own>;

/** `fn`, its error given its SQLite code name (the wire carries `code` only). */
const coded =
  (fn: (...args: never[]) => unknown) =>
  async (...args: never[]): Promise<unknown> => {
    try {
      return await fn(...args);
    } catch (err) {
      throw withSqliteCode(err);
    }
  };

const handlers = Object.fromEntries(
  Object.entries({ ...forwarded, ...own }).map(([method, fn]) => [method, coded(fn as (...args: never[]) => unknown)]),
) as unknown as Handlers<StoreThreadProtocol>;

/**
 * A claim of this many events or fewer runs before the calls queued ahead of it. Such a claim is
 * a quiet queue's (the claimer gives queues with no claim in flight a small claim of their own):
 * it takes a millisecond or two, where a flood's claims of hundreds of events and the recordings of
 * its outcomes take tens each on a loaded machine, and would otherwise delay it by all of them
 * (the isolation invariant, docs/architecture.md).
 */
const FIRST_CLAIM_EVENTS_MAX = 32;

serveRpc<StoreThreadProtocol>(handlers, {
  order: 'sequential',
  first: (method, args) =>
    method === 'eventClaim' && ((args[0] as { refs?: unknown[] }).refs?.length ?? Infinity) <= FIRST_CLAIM_EVENTS_MAX,
});
