/**
 * The bulk jobs of the PostgreSQL store on Citus: as plain PostgreSQL's (../bulk-store.ts, the
 * step's frame in ../event-writes.ts bulkStep), but a step's events are located and read shard by
 * shard, and each change is the Citus write on the event's shard with its transition (events.ts);
 * the step stays one transaction, which Citus commits on every worker it touched at once
 * (two-phase commit).
 */
import { checkLimit } from '../../core/bounds.ts';
import type * as S from '../../store.ts';
import { PostgresBulk } from '../bulk-store.ts';
import { type BulkStepOps, bulkStep } from '../event-writes.ts';
import { cancelAt, readMany, replayAt, traced, updateAt } from './events.ts';

const CITUS_BULK_STEP: BulkStepOps = {
  read: (db, tenantId, ids) =>
    readMany(
      db,
      ids.map((id) => ({ tenantId, id })),
    ),
  change: async (db, c, p, cur) =>
    traced(
      db,
      cur.shard,
      p,
      c.kind === 'cancel'
        ? await cancelAt(db, cur.shard, p, cur)
        : c.kind === 'replay'
          ? await replayAt(db, cur.shard, p, cur)
          : await updateAt(db, cur.shard, { ...p, patch: c.patch }, cur),
    ),
};

export class CitusBulk extends PostgresBulk {
  override async bulkJobStep(p: S.BulkJobStepParams): Promise<S.BulkJobStepResult | null> {
    checkLimit(Math.max(1, p.changes.length), 'bulkJobStep');
    return bulkStep(this.pool, p, CITUS_BULK_STEP);
  }
}
