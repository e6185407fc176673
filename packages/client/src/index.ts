/**
 * `@belfry/client`: Belfry's TypeScript SDK. An API client typed from the API's own schemas (that
 * batches concurrent creates), webhook verification (Standard Webhooks), a dedup helper for
 * receivers, and a pull consumer. It depends on nothing but Node's built-ins. Its time-sortable
 * ids and its webhook signer are also the server's (Belfry's node imports them from here).
 */
export {
  BelfryClient,
  AccountClient,
  BulkClient,
  DestinationsClient,
  EventsClient,
  OperationsClient,
  PullClient,
  SchedulesClient,
  SourcesClient,
  TenantsClient,
} from './client.ts';
export { Consumer, NackError, CONSUMER_CONCURRENCY_DEFAULT, CONSUMER_CONCURRENCY_MAX } from './consumer.ts';
export type { ConsumerOptions, EventHandler, HandlerContext } from './consumer.ts';
export type { BelfryClientOptions, CreatedEvent, IfMatch } from './client.ts';
export {
  BelfryApiError,
  parseRetryAfterMs,
  Transport,
  type CallInput,
  type CallResult,
  type RetryOptions,
  type TransportOptions,
} from './transport.ts';
export { ROUTES, type Operation, type Route } from './routes.ts';
export type * from './routes.ts';
export { BATCH_DELAY_MS_DEFAULT, BATCH_EVENTS_DEFAULT, type BatchingOptions } from './batcher.ts';
export { BATCH_EVENTS_CAP } from './wire.ts';
export { verifyWebhook, WebhookVerificationError } from './webhook.ts';
export { newSortableId } from './ids.ts';
export {
  decodeSecret,
  signPayload,
  verifySignature,
  SIGNATURE_TOLERANCE_SEC_DEFAULT,
  type SignInput,
  type VerifyInput,
} from './signing.ts';
export type { VerifiedWebhook, VerifyWebhookOptions, WebhookHeaders, WebhookVerificationFailure } from './webhook.ts';
export {
  Deduplicator,
  MemoryDedupStore,
  redisDedupStore,
  deliveryId,
  DEDUP_ENTRIES_MAX_DEFAULT,
  DEDUP_TTL_MS_DEFAULT,
} from './dedup.ts';
export type { DedupStore, DeduplicatorOptions, RedisLike } from './dedup.ts';
