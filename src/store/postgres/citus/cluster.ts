/**
 * The cluster methods of the PostgreSQL store on Citus: as plain PostgreSQL's (../cluster-store.ts),
 * but the rescue of dead owners' events, which runs on the shards holding their events
 * (events.ts rescueByShard), each shard's transaction first checking that the caller still holds the leader lease at its epoch.
 */
import { checkLimit } from '../../core/bounds.ts';
import type * as S from '../../store.ts';
import { PostgresCluster } from '../cluster-store.ts';
import { run } from '../db.ts';
import { rescueByShard, runCitus, type RescuedRow } from './events.ts';

export class CitusCluster extends PostgresCluster {
  override async eventRescueDead(p: S.EventRescueDeadParams): Promise<S.DueRef[] | null> {
    checkLimit(p.limit, 'eventRescueDead');
    if (p.owners.length === 0) return [];
    if ((await run(this.pool, 'leaderCheckForShare', [p.leaderId, p.epoch])).rowCount !== 1) return null;
    let leader = true;
    const shards = (await runCitus<{ shard: number }>(this.pool, 'shardsOfOwners', [p.owners])).rows.map(
      (r) => r.shard,
    );
    const rescued = await rescueByShard(this.pool, shards, p.limit, p.now, async (client, shard, limit) => {
      if ((await run(client, 'leaderCheckForShare', [p.leaderId, p.epoch])).rowCount !== 1) {
        leader = false;
        return [];
      }
      const rows = await runCitus<RescuedRow>(client, 'eventRescueDead', [p.owners, p.nodeTtlMs, limit, p.now, shard]);
      return rows.rows.map((r) => ({ ...r, reason: 'owner dead' }));
    });
    return leader || rescued.length > 0 ? rescued : null;
  }
}
