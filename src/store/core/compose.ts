/**
 * A store made of its parts. Each backend implements every part of Store (store.ts, parts/) in a
 * class of its own (`SqliteEvents` in sqlite/event-store.ts, `PostgresEvents` in
 * postgres/event-store.ts, and so on) and composeStore puts each part's methods, bound to the
 * instance that runs them, on the backend's own object (its lifecycle: capabilities, migrate,
 * ping, close). The lists below name every method of every part; the compiler checks them against
 * the part interfaces both ways (a listed name that is not a method of its part, or a method of a
 * part missing from its list, fails to compile). The SQLite thread's proxy (sqlite/thread-store.ts)
 * forwards by the same lists.
 */
import type { StoreLifecycle, StorePartMethods, StoreParts } from '../store.ts';

/** Every method of each part, by part. */
export const STORE_PART_METHODS = {
  events: [
    'eventInsertMany',
    'eventGet',
    'eventList',
    'eventListDue',
    'eventGroupHead',
    'eventClaim',
    'eventRecordAttempts',
    'eventRescue',
    'eventCancel',
    'eventUpdate',
    'eventReplay',
    'eventCountByTenantState',
    'eventCountPending',
    'eventForecast',
    'eventDeleteTerminal',
    'transitionList',
  ],
  pull: [
    'eventPullClaim',
    'eventPullSettle',
    'eventPullSettleMany',
    'eventPullSettleThenClaim',
    'eventPullExtend',
    'eventPullExpired',
    'eventPullNextDue',
  ],
  schedules: [
    'scheduleCreate',
    'scheduleGet',
    'scheduleList',
    'scheduleUpdate',
    'scheduleDelete',
    'scheduleListDue',
    'scheduleListCatchUp',
    'scheduleCountsAdd',
    'scheduleAdvance',
    'scheduleAdvanceMany',
    'scheduleOccurrenceList',
  ],
  sources: ['sourcePut', 'sourceGet', 'sourceList', 'sourceListAll', 'sourceDelete', 'sourceReport'],
  bulk: ['bulkJobCreate', 'bulkJobGet', 'bulkJobClaim', 'bulkJobStep', 'bulkJobFail'],
  accounts: [
    'tenantCreate',
    'tenantGet',
    'tenantList',
    'tenantUpdate',
    'tenantSecretsGet',
    'tenantSecretsSwap',
    'apiKeyCreate',
    'apiKeyFindByHash',
    'apiKeyList',
    'apiKeyRevoke',
    'destinationPut',
    'destinationGet',
    'destinationList',
    'destinationDelete',
  ],
  cluster: [
    'leaderAttemptElect',
    'leaderGet',
    'leaderResign',
    'nodeHeartbeat',
    'nodeList',
    'nodeDelete',
    'claimLeaseRenew',
    'shardAssign',
    'shardList',
    'shardCountRecord',
    'shardLag',
    'eventRescueDead',
    'timeNow',
  ],
} as const satisfies { [P in keyof StoreParts]: readonly (keyof StoreParts[P])[] };

/** The methods of a part its list leaves out (never, while every list is whole). */
type Unlisted = {
  [P in keyof StoreParts]: Exclude<keyof StoreParts[P], (typeof STORE_PART_METHODS)[P][number]>;
}[keyof StoreParts];
/** Compiles only while every list is whole: the error names the method missing from its list. */
const everyMethodListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyMethodListed;

/** The name of a method of some part. */
export type StorePartMethod = keyof StorePartMethods;

/**
 * Puts every method of every part on `own` (the backend's lifecycle object), each bound to the
 * part that runs it, and returns `own` as the Store it now is. `own` may hold no method of a part
 * (a compile error, and a throw for what the compiler cannot see), so each name has one place
 * that runs it.
 */
export function composeStore<Own extends StoreLifecycle>(
  own: Own & { [K in StorePartMethod]?: never },
  parts: StoreParts,
): Own & StorePartMethods {
  const store = own as Record<string, unknown>;
  for (const part of Object.keys(STORE_PART_METHODS) as (keyof StoreParts)[]) {
    const impl = parts[part] as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const method of STORE_PART_METHODS[part]) {
      if (method in store) throw new Error(`composeStore: ${method} is both the store's own and part ${part}'s`);
      if (typeof impl[method] !== 'function') throw new Error(`composeStore: part ${part} has no method ${method}`);
      store[method] = impl[method].bind(impl);
    }
  }
  return store as unknown as Own & StorePartMethods;
}

/**
 * Parts whose every method hands its arguments, with its name, to `send` and answers what it
 * answers: a store whose calls run elsewhere (the SQLite thread). The lists are whole, so every
 * part is.
 */
export function forwardParts(send: (method: StorePartMethod, args: unknown[]) => Promise<unknown>): StoreParts {
  const parts: Record<string, Record<string, (...args: unknown[]) => Promise<unknown>>> = {};
  for (const [part, methods] of Object.entries(STORE_PART_METHODS)) {
    parts[part] = Object.fromEntries(methods.map((m) => [m, (...args: unknown[]) => send(m, args)]));
  }
  return parts as unknown as StoreParts;
}
