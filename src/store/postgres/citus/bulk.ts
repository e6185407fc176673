/**
 * The bulk jobs of the PostgreSQL store on Citus: as plain PostgreSQL's (../bulk-store.ts), but a
 * step's events are located and read shard by shard, and each change is the Citus write on the
 * event's shard with its transition (events.ts); the step stays one transaction, which Citus
 * commits on every worker it touched at once (two-phase commit).
 */
import { CANCELABLE_STATES, EDITABLE_STATES, type EventRecord, REPLAYABLE_STATES } from '../../../core/event.ts';
import { checkLimit } from '../../core/bounds.ts';
import { bulkJobFromRow, type BulkJobRow } from '../../core/bulk-rows.ts';
import { keyOf, mutateRefusal } from '../../core/event-writes.ts';
import { eventFromRow } from '../../core/rows.ts';
import type * as S from '../../store.ts';
import { runBulk } from '../bulk-queries.ts';
import { PostgresBulk } from '../bulk-store.ts';
import { inTransaction } from '../db.ts';
import { TX } from '../queries.ts';
import { cancelAt, readMany, replayAt, traced, updateAt } from './events.ts';

export class CitusBulk extends PostgresBulk {
  override async bulkJobStep(p: S.BulkJobStepParams): Promise<S.BulkJobStepResult | null> {
    checkLimit(Math.max(1, p.changes.length), 'bulkJobStep');
    return inTransaction(this.pool, TX.begin, async (client) => {
      if ((await runBulk(client, 'bulkJobLeaseCheck', [p.tenantId, p.id, p.owner, p.now])).rowCount !== 1) return null;
      const operation = { name: p.operation, id: p.id };
      const rows = await readMany(
        client,
        p.changes.map((c) => ({ tenantId: p.tenantId, id: c.id })),
      );
      const current = new Map(rows.map((r) => [keyOf(r.tenant_id, r.id), r]));
      const changed: EventRecord[] = [];
      for (const c of p.changes) {
        const cur = current.get(keyOf(p.tenantId, c.id));
        const base = { tenantId: p.tenantId, id: c.id, expectedVersion: c.version, now: p.now, operation };
        const allowed =
          c.kind === 'cancel' ? CANCELABLE_STATES : c.kind === 'replay' ? REPLAYABLE_STATES : EDITABLE_STATES;
        if (!cur || mutateRefusal(cur, base, allowed, c.kind !== 'cancel')) continue;
        const change =
          c.kind === 'cancel'
            ? await cancelAt(client, cur.shard, base, cur)
            : c.kind === 'replay'
              ? await replayAt(client, cur.shard, base, cur)
              : await updateAt(client, cur.shard, { ...base, patch: c.patch }, cur);
        const row = await traced(client, cur.shard, base, change);
        if (row && row.version !== c.version) changed.push(eventFromRow(row));
      }
      const res = await runBulk<BulkJobRow>(client, 'bulkJobProgress', [
        p.tenantId,
        p.id,
        p.cursor,
        p.matched,
        changed.length,
        p.skipped + (p.changes.length - changed.length),
        p.leaseUntil,
        p.now,
        p.finished,
      ]);
      return { changed, job: bulkJobFromRow(res.rows[0]) };
    });
  }
}
