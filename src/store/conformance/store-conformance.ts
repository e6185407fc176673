/**
 * The Store conformance suite: every backend runs it against its real database, and passes it
 * unchanged. It registers node:test `describe`/`it` blocks; a backend's test file only supplies
 * a factory of fresh, migrated stores:
 *
 *   runStoreConformance('sqlite', async () => { const store = ...; return { store, cleanup, reopen } });
 *
 * Tests share one store per section and stay apart by using their own tenants and shards; the
 * few that look across tenants (due lists without a shard filter, rescue, counts, durability)
 * get a store of their own. Times are fixed instants passed as `now`; nothing sleeps. The cluster
 * methods' time is the backend's ClusterTime: simulated where the backend judges by the caller's
 * `now` (SQLite), the store's own clock, polled under a deadline, where it does not (PostgreSQL).
 */
import { after, before, describe } from 'node:test';
import { basicsCases, tenantKeyDestinationCases } from './cases-accounts.ts';
import { claimCases, insertCases } from './cases-insert-claim.ts';
import { dueListCases, groupCases } from './cases-groups-due.ts';
import { attemptCases, rescueCases } from './cases-attempts-rescue.ts';
import { cancelCases, replayCases, updateCases } from './cases-mutations.ts';
import { leaderCases, nodeShardCases } from './cases-cluster.ts';
import { countDurabilityCases, listCases, transitionCases } from './cases-list-trace.ts';
import { quotaCases } from './cases-quotas.ts';
import { leaseRenewCases, shardLagCases } from './cases-lease-lag.ts';
import { retentionCases } from './cases-retention.ts';
import { scheduleCases } from './cases-schedules.ts';
import { sourceCases } from './cases-sources.ts';
import { typeCases } from './cases-type.ts';
import { forecastCases } from './cases-forecast.ts';
import { bulkCases } from './cases-bulk.ts';
import { pullCases } from './cases-pull.ts';
import {
  type ClusterTime,
  type MakeStore,
  type StoreHarness,
  storeClusterTime,
  type SuiteContext,
} from './fixtures.ts';

export type { MakeStore, StoreHarness, SuiteContext } from './fixtures.ts';

type Section = (ctx: SuiteContext) => void;

const SECTIONS: [string, Section][] = [
  ['basics', basicsCases],
  ['tenants, api keys, destinations', tenantKeyDestinationCases],
  ['tenant settings, pending counts, key grace, secret expiry', quotaCases],
  ['eventInsertMany', insertCases],
  ['eventClaim', claimCases],
  ['groups', groupCases],
  ['eventListDue', dueListCases],
  ['eventRecordAttempts', attemptCases],
  ['eventRescue', rescueCases],
  ['claimLeaseRenew', leaseRenewCases],
  ['shardLag', shardLagCases],
  ['eventCancel', cancelCases],
  ['eventUpdate', updateCases],
  ['eventReplay', replayCases],
  ['eventList', listCases],
  ['event type', typeCases],
  ['pull delivery', pullCases],
  ['eventForecast', forecastCases],
  ['bulk jobs', bulkCases],
  ['transitionList', transitionCases],
  ['eventDeleteTerminal (retention)', retentionCases],
  ['counts and durability', countDurabilityCases],
  ['leader lease and clock', leaderCases],
  ['nodes, shard map, fenced claims', nodeShardCases],
  ['schedules', scheduleCases],
  ['sources', sourceCases],
];

/**
 * Registers the whole suite for one backend. `time` is the cluster methods' time: a backend that
 * judges leases and heartbeats by the caller's `now` passes simulatedClusterTime().
 */
export function runStoreConformance(name: string, makeStore: MakeStore, time: ClusterTime = storeClusterTime): void {
  describe(`Store conformance: ${name}`, () => {
    for (const [title, section] of SECTIONS) {
      describe(title, () => {
        let harness: StoreHarness | undefined;
        before(async () => {
          harness = await makeStore();
        });
        after(async () => {
          await harness?.cleanup();
        });
        section({
          store: () => {
            if (!harness) throw new Error('store conformance: the section store is not open');
            return harness.store;
          },
          make: makeStore,
          time,
        });
      });
    }
  });
}
