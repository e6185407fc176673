/**
 * Sources (docs/sources.md): schedule requests read from Kafka topics. What the rest of the code
 * may use of them. The reader (kafka/reader.ts) is imported by path where it is made, so only a
 * node with a source loads the Kafka client: this file re-exports its types alone.
 */
export type { MessageOutcome, ReaderReport, SourceMessage, SourceSink } from './kafka/reader.ts';
export { lazyReader, type Reader, SourceManager, type SourceManagerOptions } from './manager.ts';
export {
  defaultSourceGroupId,
  SOURCES_PER_TENANT_MAX,
  SourceService,
  type SourceServiceDeps,
} from './service.ts';
