/**
 * The Store's part for sources: schedule requests read from a Kafka topic (docs/sources.md).
 * The records, the params and the source methods (implemented by each backend's source-store.ts).
 *
 * A source row holds its spec (credentials included: the API never shows them) and what the
 * nodes reading it report: counts of messages accepted and rejected, the last errors (at most
 * SOURCE_ERRORS_MAX), a state and the lag of each partition. Offsets are not here: they live in the Kafka consumer group,
 * committed only after the events a message holds are stored.
 */

/** How a source reads its topic. Only `kafka` for now. */
export interface SourceSpec {
  kind: 'kafka';
  brokers: string[];
  topic: string;
  groupId: string;
  /** Where invalid messages go (bytes unchanged, reason in `belfry-error`); null: counted and skipped. */
  deadLetterTopic: string | null;
  /** Where a new consumer group starts. */
  start: 'earliest' | 'latest';
  /** Write-only credentials. */
  sasl: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string } | null;
  ssl: boolean;
}

/** `starting` until a node reads it; `running`; `failing` while a node cannot reach the broker. */
export type SourceState = 'starting' | 'running' | 'failing';

export interface SourceError {
  at: number;
  message: string;
}

export interface SourceRecord {
  tenantId: string;
  name: string;
  /** Grows with each PUT: a node reading an older version restarts its consumer. */
  version: number;
  spec: SourceSpec;
  state: SourceState;
  /** Messages whose events were all stored. */
  acceptedCount: number;
  /** Messages refused (sent to the dead-letter topic). */
  rejectedCount: number;
  /** Newest last, at most SOURCE_ERRORS_MAX. */
  lastErrors: SourceError[];
  /** Messages behind the end of each partition (by partition number), as its reader last reported. */
  lag: Record<string, number>;
  createdAt: number;
  updatedAt: number;
}

export const SOURCE_ERRORS_MAX = 10;
/** Bound on one page of sources. */
export const SOURCE_PAGE_MAX = 1_000;

export type SourcePutResult =
  | { kind: 'created' | 'replaced'; source: SourceRecord }
  /** The tenant has `perTenantMax` sources already. */
  | { kind: 'limit' };

export interface SourceReportParams {
  tenantId: string;
  name: string;
  acceptedAdd: number;
  rejectedAdd: number;
  /** Appended; only the newest SOURCE_ERRORS_MAX are kept. */
  errors: SourceError[];
  /** Left as it is when absent. */
  state?: SourceState;
  /** Merged into the stored lag, partition by partition. */
  lag?: Record<string, number>;
  now: number;
}

export function checkSourcePage(limit: number, what: string): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > SOURCE_PAGE_MAX)
    throw new RangeError(`${what}: limit must be 1-${SOURCE_PAGE_MAX}, got ${limit}`);
}

/** The source methods of Store. */
export interface SourceStore {
  /** Creates (version 1) or replaces the spec (version + 1, counts kept); a new one only while the tenant has fewer than perTenantMax. */
  sourcePut(params: {
    tenantId: string;
    name: string;
    spec: SourceSpec;
    perTenantMax: number;
    now: number;
  }): Promise<SourcePutResult>;
  sourceGet(params: { tenantId: string; name: string }): Promise<SourceRecord | null>;
  /** A tenant's sources by name, after `afterName`. */
  sourceList(params: { tenantId: string; afterName?: string; limit: number }): Promise<SourceRecord[]>;
  /** Every tenant's sources by (tenantId, name), after `after`: what the nodes read. */
  sourceListAll(params: { after?: { tenantId: string; name: string }; limit: number }): Promise<SourceRecord[]>;
  /** True when it existed. */
  sourceDelete(params: { tenantId: string; name: string }): Promise<boolean>;
  /** Adds to the counts, appends errors, sets the state; false when the source is gone. */
  sourceReport(params: SourceReportParams): Promise<boolean>;
}
