/**
 * `belfry/client`: the TypeScript SDK. An API client typed from the API's own schemas, webhook
 * verification (Standard Webhooks), a dedup helper for receivers, and a pull consumer. It loads no server code
 * (no Fastify, no database driver): only the Node built-ins, and Belfry's pure id and signing
 * functions.
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
export { BelfryApiError, parseRetryAfterMs, type RetryOptions } from './transport.ts';
export { ROUTES, type Operation, type Route } from './routes.ts';
export type * from './routes.ts';
export { verifyWebhook, WebhookVerificationError } from './webhook.ts';
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
