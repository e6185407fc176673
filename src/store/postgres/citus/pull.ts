/**
 * Pull delivery on the PostgreSQL store on Citus (as ../pull-store.ts otherwise):
 *
 * - A claim first reads where the queue's first due rows are (pullCandidates: the first `examine`
 *   rows in due order over every shard, a read without locks), then claims on each shard that
 *   holds one of the first `max` of them, at most as many as it holds there, in the order of its
 *   first candidate: one transaction per shard (group locks on that shard's worker, the claim, its
 *   transitions). A claim may answer fewer than `max` when some of those rows were taken meanwhile
 *   or wait behind their group's head; the consumer claims again, as after any short claim.
 * - Settles and extends are located by (tenant, id) and run on the event's shard. Settles go by
 *   Citus shard to its worker, one statement each (direct.ts), else one transaction per shard
 *   through the coordinator.
 * - Expiries and a queue's next due time are reads over every shard (the plain statements).
 */
import type { EventRecord } from '../../../core/event.ts';
import { checkPullClaim, checkPullSettleMany } from '../../core/bounds.ts';
import { keyOf } from '../../core/event-writes.ts';
import { eventFromRow, type EventRow } from '../../core/rows.ts';
import * as S from '../../store.ts';
import { inTransaction, type Queryable } from '../db.ts';
import { settleManyValues } from '../event-writes.ts';
import { PostgresPull } from '../pull-store.ts';
import { TX } from '../queries.ts';
import type { PostgresDatabase } from '../database.ts';
import { type CitusWorkers, routed } from './direct.ts';
import { groupByShard, locate, locateMany, runCitus, transitionsInsert } from './events.ts';
import { Placement } from './placement.ts';

type ClaimedRow = EventRow & { from_state: string };
type SettledRow = EventRow & { settled_at: number; settle_error: string | null; settle_detail: string; ord: number };

export class CitusPull extends PostgresPull {
  private readonly placement = new Placement(this.pool);
  private readonly workers: CitusWorkers | null;

  constructor(database: PostgresDatabase) {
    super(database);
    this.workers = database.citusWorkers;
  }

  override async eventPullClaim(p: S.EventPullClaimParams): Promise<EventRecord[]> {
    checkPullClaim(p);
    const examine = Math.max(S.PULL_EXAMINE_MIN, p.max * S.PULL_EXAMINE_FACTOR);
    const types = p.types === null ? null : [...new Set(p.types)];
    const candidates = (
      await runCitus<{ shard: number }>(this.pool, 'pullCandidates', [p.tenantId, p.queue, p.now, examine, types])
    ).rows;
    const quota = new Map<number, number>();
    for (const c of candidates.slice(0, p.max)) quota.set(c.shard, (quota.get(c.shard) ?? 0) + 1);
    const detail = JSON.stringify({ pull: 'claim', visibleUntil: p.leaseUntil });
    const claimed: EventRecord[] = [];
    for (const [shard, max] of quota) {
      const rows = await inTransaction(this.pool, TX.begin, async (client) => {
        await runCitus(client, 'pullGroupLock', [p.tenantId, p.queue, p.now, examine, shard, types]);
        const rows = (
          await runCitus<ClaimedRow>(client, 'pullClaim', [
            p.tenantId,
            p.queue,
            p.now,
            examine,
            max,
            p.leaseUntil,
            p.receipt,
            detail,
            shard,
            types,
          ])
        ).rows;
        await transitionsInsert(
          client,
          rows.map((r) => ({
            shard,
            tenantId: r.tenant_id,
            eventId: r.id,
            seq: r.version,
            at: p.now,
            kind: 'state',
            fromState: r.from_state,
            toState: 'executing',
            attempt: r.attempts,
            latenessMs: p.now - r.due_at,
            detail,
          })),
        );
        return rows;
      });
      claimed.push(...rows.map(eventFromRow));
    }
    return claimed.sort((a, b) => (a.dueAt !== b.dueAt ? a.dueAt - b.dueAt : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  override async eventPullSettle(p: S.EventPullSettleParams): Promise<EventRecord | null> {
    const shard = await locate(this.pool, p.tenantId, p.id);
    if (shard === null) return null;
    const [row] = await this.settleLocated([p], [shard]);
    return row ?? null;
  }

  override async eventPullSettleMany(params: { settles: S.EventPullSettleParams[] }): Promise<(EventRecord | null)[]> {
    checkPullSettleMany(params.settles);
    const settles = params.settles;
    const located = await locateMany(this.pool, settles);
    return this.settleLocated(
      settles,
      settles.map((s) => located.get(keyOf(s.tenantId, s.id)) ?? null),
    );
  }

  /** The settles (by Citus shard, on its worker), then the claim (over the shards): two steps, not one transaction. */
  override async eventPullSettleThenClaim(params: {
    settles: S.EventPullSettleParams[];
    claim: S.EventPullClaimParams;
  }): Promise<{ settled: (EventRecord | null)[]; events: EventRecord[] }> {
    const settled = await this.eventPullSettleMany({ settles: params.settles });
    return { settled, events: await this.eventPullClaim(params.claim) };
  }

  /**
   * `settles`, each on its shard (`shards`, by index; null: no such event, left out), a statement
   * per Citus shard on its worker, else each shard's in a transaction through the coordinator;
   * null where one changed nothing. A settle names an event at most once (bounds.ts).
   */
  private async settleLocated(
    settles: S.EventPullSettleParams[],
    shards: (number | null)[],
  ): Promise<(EventRecord | null)[]> {
    const out: (EventRecord | null)[] = settles.map(() => null);
    for (const { indexes, home } of await this.placement.group(shards)) {
      const part = indexes.map((i) => settles[i]);
      const rows = await routed(
        this.workers,
        this.placement,
        home,
        async (workers, at) => {
          const partShards = indexes.map((i) => shards[i]!);
          const settled = await workers.settle<SettledRow>(
            at,
            [...settleManyValues(part), [...new Set(partShards)]],
            partShards,
          );
          const rows: (EventRecord | null)[] = part.map(() => null);
          for (const r of settled) rows[Number(r.ord) - 1] = eventFromRow(r);
          return rows;
        },
        async () => {
          const rows: (EventRecord | null)[] = part.map(() => null);
          for (const [shard, ks] of groupByShard(indexes.map((i) => shards[i]))) {
            const settled = await this.settleOnShard(
              shard,
              ks.map((k) => part[k]),
            );
            settled.forEach((row, j) => {
              rows[ks[j]] = row;
            });
          }
          return rows;
        },
      );
      rows.forEach((row, k) => {
        out[indexes[k]] = row;
      });
    }
    return out;
  }

  /** `settles` (all of `shard`) in one transaction there: the statement, then the transitions; null where one changed nothing. */
  private settleOnShard(shard: number, settles: S.EventPullSettleParams[]): Promise<(EventRecord | null)[]> {
    return inTransaction(this.pool, TX.begin, async (client: Queryable) => {
      const rows = (await runCitus<SettledRow>(client, 'pullSettleMany', [...settleManyValues(settles), shard])).rows;
      await transitionsInsert(
        client,
        rows.map((r) => ({
          shard,
          tenantId: r.tenant_id,
          eventId: r.id,
          seq: r.version,
          at: r.settled_at,
          kind: 'state',
          fromState: 'executing',
          toState: r.state,
          attempt: r.attempts,
          error: r.settle_error,
          detail: r.settle_detail,
        })),
      );
      const out: (EventRecord | null)[] = settles.map(() => null);
      for (const r of rows) out[Number(r.ord) - 1] = eventFromRow(r);
      return out;
    });
  }

  override async eventPullExtend(p: S.EventPullExtendParams): Promise<EventRecord | null> {
    const shard = await locate(this.pool, p.tenantId, p.id);
    if (shard === null) return null;
    const row = await inTransaction(this.pool, TX.begin, async (client) => {
      const row = (
        await runCitus<EventRow>(client, 'pullExtend', [p.tenantId, p.id, p.receipt, p.leaseUntil, p.now, shard])
      ).rows[0];
      if (row)
        await transitionsInsert(client, [
          {
            shard,
            tenantId: row.tenant_id,
            eventId: row.id,
            seq: row.version,
            at: p.now,
            kind: 'state',
            fromState: 'executing',
            toState: 'executing',
            attempt: row.attempts,
            detail: JSON.stringify({ pull: 'extend', visibleUntil: row.lease_until }),
          },
        ]);
      return row;
    });
    return row ? eventFromRow(row) : null;
  }
}
