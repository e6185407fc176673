/**
 * The Store's part for pull delivery (docs/pull.md): consumers claim due events of a pull
 * destination's queue, then ack, nack or extend them; claims whose visibility timeout ended are
 * expired. Implemented by each backend's pull-store.ts.
 */

import type { EventRecord } from '../../core/event.ts';

/** The lease owner of every claimed pull event (no node's claim lease keeps it; see eventPullExpired). */
export const PULL_LEASE_OWNER = 'pull';

/** Events one pull claim hands out at most. */
export const PULL_CLAIM_MAX = 100;

/** Claim ends (acks and nacks) one eventPullSettleMany call applies at most. */
export const PULL_SETTLE_MAX = 1_000;

/** Index entries one pull claim reads per type at most: `max` × this factor, at least PULL_EXAMINE_MIN. */
export const PULL_EXAMINE_FACTOR = 4;

export const PULL_EXAMINE_MIN = 100;

export interface EventPullClaimParams {
  tenantId: string;
  /** The pull destination's queue (`name:<destination>`, core/queue.ts). */
  queue: string;
  /** Only events of these types (1 to 10 of them); null: any type, untyped included. */
  types: string[] | null;
  /** 1 to PULL_CLAIM_MAX. */
  max: number;
  now: number;
  /** The visibility timeout ends at this instant. */
  leaseUntil: number;
  /** The receipt of this claim (a random token from the caller), stored with each event it claims. */
  receipt: string;
}

/** What ends a pull claim: the consumer's ack or nack, or the end of its visibility timeout. */
export type PullSettleAction = 'ack' | 'nack' | 'expire';

export interface EventPullSettleParams {
  tenantId: string;
  id: string;
  /** Applies only while the event is executing under this receipt. */
  receipt: string;
  /** And only at this attempt (the one the caller decided `to` from); null: any. */
  attempts: number | null;
  action: PullSettleAction;
  /** Decided by the caller from the event's retry policy (dispatch/outcome.ts decideNext). */
  to: 'succeeded' | 'discarded' | 'awaiting_retry' | 'archived';
  /** For awaiting_retry: when it is claimable again. */
  retryAt?: number;
  error?: string;
  now: number;
}

export interface EventPullExtendParams {
  tenantId: string;
  id: string;
  receipt: string;
  now: number;
  /** The visibility timeout ends at this instant (never earlier than it already does). */
  leaseUntil: number;
}

/** The pull methods of Store. */
export interface PullStore {
  /**
   * Pull delivery: claims up to `max` due events of one pull queue (of `types`), in due order,
   * each a group head (no earlier live member of its group), with the conditional write of a fire
   * (fireable at the version read; rows another claimer holds are skipped), setting the lease to
   * `leaseUntil`, the owner to PULL_LEASE_OWNER and the receipt. One `state` transition each.
   * Reads a bounded page of an index per type (PULL_EXAMINE_*), never the queue's whole backlog.
   */
  eventPullClaim(params: EventPullClaimParams): Promise<EventRecord[]>;
  /**
   * Ends a claim (ack, nack or expiry) as the caller decided: executing → `to`, lease and receipt
   * cleared, one `state` transition naming the action. Null (nothing changed) unless the event is
   * executing under `receipt` (at `attempts`).
   */
  eventPullSettle(params: EventPullSettleParams): Promise<EventRecord | null>;
  /**
   * Ends many claims at once, each exactly as eventPullSettle would (its own condition, its own
   * transition), in one transaction: the answers in the order given, null for each that changed
   * nothing. 1 to PULL_SETTLE_MAX of them, never one event twice (a RangeError otherwise).
   */
  eventPullSettleMany(params: { settles: EventPullSettleParams[] }): Promise<(EventRecord | null)[]>;
  /**
   * A consumer's claim that carries its earlier acks: `settles` exactly as eventPullSettleMany
   * would apply them, then `claim` exactly as eventPullClaim would (so an ack that ends a group's
   * head lets the claim take the group's next event), in one transaction where the backend can.
   */
  eventPullSettleThenClaim(params: {
    settles: EventPullSettleParams[];
    claim: EventPullClaimParams;
  }): Promise<{ settled: (EventRecord | null)[]; events: EventRecord[] }>;
  /** Extends a claim's visibility timeout; null (nothing changed) unless it is held under `receipt`. One transition. */
  eventPullExtend(params: EventPullExtendParams): Promise<EventRecord | null>;
  /**
   * Claimed pull events whose visibility timeout ended before `now`, the oldest first, with their
   * receipts: the expirer settles each (action `expire`) by its retry policy.
   */
  eventPullExpired(params: { now: number; limit: number }): Promise<{ event: EventRecord; receipt: string }[]>;
  /** The due time of the queue's first fireable event (null: none): when a parked claim should look again. */
  eventPullNextDue(params: { tenantId: string; queue: string }): Promise<number | null>;
}
