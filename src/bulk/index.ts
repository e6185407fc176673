/** Bulk operations (docs/bulk-and-forecast.md): what the rest of the code may use of them. */
export { type BulkPage, bulkSelectPage } from './page.ts';
export {
  BULK_STEP_FAILURES_MAX,
  type BulkRun,
  BulkRunner,
  type BulkRunnerDeps,
  type BulkRunnerOptions,
  DEFAULT_BULK_RUNNER_OPTIONS,
} from './runner.ts';
export { type BulkAction, bulkApplies, bulkChange, type BulkFilter, bulkOperation } from './selection.ts';
export {
  BULK_RUNNING_PER_TENANT_MAX,
  type BulkDryRun,
  BulkService,
  type BulkServiceDeps,
  DRY_RUN_PAGE_SIZE,
  DRY_RUN_PAGES_MAX,
  DRY_RUN_SAMPLE_MAX,
} from './service.ts';
