/**
 * Recurring schedules: what the rest of the code may use of them. The occurrence math itself
 * (cron and every, zones, the missed rules) is in core/occurrences.ts and core/missed.ts.
 */
export { occurrenceLimits, type OccurrenceLimits, type TenantQuotaPort } from './limits.ts';
export {
  advanceSchedule,
  advanceSchedules,
  MATERIALISER_DEFAULTS,
  Materialiser,
  type MaterialiserDeps,
  type MaterialiserOptions,
  madeAheadMs,
} from './materialiser.ts';
export {
  firstOccurrence,
  missedRuleOf,
  occurrenceAt,
  occurrenceEvent,
  parseOccurrenceId,
  templateKey,
  timingKey,
  timingOf,
} from './occurrence.ts';
export { OccurrenceGate, type OccurrenceGateDeps } from './occurrence-gate.ts';
export { SCHEDULES_PER_TENANT_MAX, ScheduleService, type ScheduleServiceDeps, scheduleNotFound } from './service.ts';
