/**
 * Pull delivery (docs/pull.md): what the rest of the code may use of it. The `pull` kind's
 * registration and its Channel stay in channels/pull/ with the other kinds.
 */
export { PullExpirer, type PullExpirerDeps } from './expirer.ts';
export {
  PullService,
  type PullClaimRequest,
  type PullServiceDeps,
  type PullSettleItem,
  type PullSettleResult,
} from './service.ts';
export { decidePull, PULL_EXPIRED_REASON, type PullEnd, pullPolicy } from './settle.ts';
export { DEFAULT_PULL_WAITERS_OPTIONS, PullWaiters, type PullWaitersOptions, type PullWatch } from './waiters.ts';
