/**
 * Sources' service: what the /v1/sources routes do once a body is checked into a SourceSpec.
 * A source is a row in the store; the nodes find new, changed and deleted ones there
 * (manager.ts) and run their readers.
 */
import type { Clock } from '../core/clock.ts';
import { BelfryError } from '../core/errors.ts';
import type { SourceRecord, SourceSpec } from '../store/sources.ts';
import type { Store } from '../store/store.ts';

export const SOURCES_PER_TENANT_MAX = 100;

/**
 * A source's consumer group when the body names none: its own, `belfry/<tenant id>/<name>`. Two
 * sources sharing a group split their topics' partitions, and a member may be handed a partition
 * of a topic it never subscribed to (the group's leader assigns over every member's topics), so
 * no group is shared by default. The `/` appears in no tenant id or source name, so no two sources
 * derive the same group, and no body can name it (`groupId` allows no `/`). The same name and
 * tenant give the same group: a replace keeps its offsets.
 */
export function defaultSourceGroupId(tenantId: string, name: string): string {
  return `belfry/${tenantId}/${name}`;
}

function sourceNotFound(name: string): BelfryError {
  return new BelfryError('not_found', `no source named "${name}"`, [{ field: 'name', message: 'not found' }]);
}

export interface SourceServiceDeps {
  store: Pick<Store, 'sourcePut' | 'sourceList' | 'sourceGet' | 'sourceDelete'>;
  clock: Clock;
}

export class SourceService {
  constructor(private readonly deps: SourceServiceDeps) {}

  /** Creates or replaces source `name`; quota_exceeded past SOURCES_PER_TENANT_MAX. */
  async put(tenantId: string, name: string, spec: SourceSpec): Promise<{ created: boolean; source: SourceRecord }> {
    const result = await this.deps.store.sourcePut({
      tenantId,
      name,
      spec,
      perTenantMax: SOURCES_PER_TENANT_MAX,
      now: this.deps.clock.now(),
    });
    if (result.kind === 'limit') {
      throw new BelfryError(
        'quota_exceeded',
        `the tenant has ${SOURCES_PER_TENANT_MAX} sources, the most it may have; delete one first`,
        [
          {
            field: 'name',
            message: `at most ${SOURCES_PER_TENANT_MAX} sources per tenant`,
            limit: 'sourcesPerTenantMax',
          },
        ],
      );
    }
    return { created: result.kind === 'created', source: result.source };
  }

  /** A page of the tenant's sources by name, after `afterName`. */
  list(tenantId: string, afterName: string | undefined, limit: number): Promise<SourceRecord[]> {
    return this.deps.store.sourceList({ tenantId, afterName, limit });
  }

  /** The source, or not_found. */
  async get(tenantId: string, name: string): Promise<SourceRecord> {
    const source = await this.deps.store.sourceGet({ tenantId, name });
    if (!source) throw sourceNotFound(name);
    return source;
  }

  /** Deletes the source (the nodes stop reading it); returns it as it was, or not_found. */
  async delete(tenantId: string, name: string): Promise<SourceRecord> {
    const source = await this.deps.store.sourceGet({ tenantId, name });
    if (!source || !(await this.deps.store.sourceDelete({ tenantId, name }))) throw sourceNotFound(name);
    return source;
  }
}
