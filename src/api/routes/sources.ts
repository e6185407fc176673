/**
 * /v1/sources: schedule requests read from a Kafka topic (DESIGN.md, "Sources"). PUT creates or
 * replaces (idempotent; a replace restarts the readers on the new spec, the consumer group keeps
 * its offsets). The SASL password is write-only, and SASL PLAIN goes only over TLS unless the body
 * says `allowInsecureCredentials`. Each source has its own consumer group unless it names one. The nodes find new, changed and deleted sources
 * in the store (sources/manager.ts) and report their counts, errors and lag there.
 */
import type { FastifyInstance } from 'fastify';
import type { AddressPolicy } from '../../core/address.ts';
import { BelfryError } from '../../core/errors.ts';
import { kafkaSpec } from '../../channels/kafka/index.ts';
import { optInJson, type InsecureCredentialsOptIn } from '../../channels/broker/config.ts';
import type { SourceRecord, SourceSpec } from '../../store/sources.ts';
import type { AppDeps } from '../deps.ts';
import { isoTime } from '../event-json.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';
import {
  SourceJson,
  SourceListQuery,
  SourceListResponse,
  SourceNameParams,
  SourcePutBody,
  type SourceJsonOutput,
  type SourceListQueryInput,
  type SourceNameParamsInput,
  type SourcePutInput,
} from '../schemas/sources.ts';

export const SOURCES_PER_TENANT_MAX = 100;
const LIST_LIMIT_DEFAULT = 100;

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

/**
 * The body as a stored spec; broker hosts pass the private-address guard (400 naming `brokers.N`),
 * and SASL PLAIN without `ssl` needs `allowInsecureCredentials` (400 naming `sasl.mechanism`).
 */
export function toSourceSpec(body: SourcePutInput, policy: AddressPolicy, tenantId: string, name: string): SourceSpec & InsecureCredentialsOptIn {
  const target = kafkaSpec.parse({ brokers: body.brokers, topic: body.topic, sasl: body.sasl, ssl: body.ssl, allowInsecureCredentials: body.allowInsecureCredentials }, policy);
  return {
    kind: 'kafka',
    brokers: target.brokers,
    topic: body.topic,
    groupId: body.groupId ?? defaultSourceGroupId(tenantId, name),
    deadLetterTopic: body.deadLetterTopic ?? null,
    start: body.start ?? 'earliest',
    sasl: body.sasl ?? null,
    ssl: body.ssl ?? false,
    ...optInJson(body),
  };
}

export function toSourceJson(s: SourceRecord): SourceJsonOutput {
  const lags = Object.values(s.lag);
  return {
    name: s.name,
    kind: s.spec.kind,
    brokers: s.spec.brokers,
    topic: s.spec.topic,
    groupId: s.spec.groupId,
    deadLetterTopic: s.spec.deadLetterTopic,
    start: s.spec.start,
    ssl: s.spec.ssl,
    sasl: s.spec.sasl ? { mechanism: s.spec.sasl.mechanism, username: s.spec.sasl.username } : null,
    ...optInJson(s.spec as InsecureCredentialsOptIn),
    version: s.version,
    state: s.state,
    lag: lags.length === 0 ? null : lags.reduce((a, b) => a + b, 0),
    accepted: s.acceptedCount,
    rejected: s.rejectedCount,
    lastErrors: s.lastErrors.map((e) => ({ at: isoTime(e.at), message: e.message })),
    createdAt: isoTime(s.createdAt),
    updatedAt: isoTime(s.updatedAt),
  };
}

export function sourceRoutes(app: FastifyInstance, deps: AppDeps): void {
  const tags = ['sources'];
  app.put<{ Params: SourceNameParamsInput; Body: SourcePutInput }>(
    '/v1/sources/:name',
    {
      schema: {
        tags,
        summary: 'Create or replace a Kafka source',
        description: '201 when created, 200 when replaced. Each message of the topic holds one event body (as for POST /v1/events) or {"events": [...]}; ' +
          'its events are scheduled for this tenant under its limits; its offset is committed once they are stored. An event without an id gets ' +
          '`<source>:<partition>:<offset>:<n>`, so a message read again creates nothing twice.',
        security: BEARER_SECURITY,
        params: SourceNameParams,
        body: SourcePutBody,
        response: { 200: SourceJson, 201: SourceJson, ...errorResponses(400, 401, 403, 413, 415) },
      },
    },
    async (request, reply) => {
      const { tenantId } = request;
      const spec = toSourceSpec(request.body, deps.addressPolicy, tenantId, request.params.name);
      const result = await deps.store.sourcePut({ tenantId, name: request.params.name, spec, perTenantMax: SOURCES_PER_TENANT_MAX, now: deps.clock.now() });
      if (result.kind === 'limit') {
        throw new BelfryError('quota_exceeded', `the tenant has ${SOURCES_PER_TENANT_MAX} sources, the most it may have; delete one first`, [
          { field: 'name', message: `at most ${SOURCES_PER_TENANT_MAX} sources per tenant`, limit: 'sourcesPerTenantMax' },
        ]);
      }
      reply.status(result.kind === 'created' ? 201 : 200);
      return toSourceJson(result.source);
    },
  );

  app.get<{ Querystring: SourceListQueryInput }>(
    '/v1/sources',
    {
      schema: {
        tags,
        summary: 'List sources by name',
        security: BEARER_SECURITY,
        querystring: SourceListQuery,
        response: { 200: SourceListResponse, ...errorResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const limit = request.query.limit === undefined ? LIST_LIMIT_DEFAULT : Number(request.query.limit);
      const page = await deps.store.sourceList({ tenantId: request.tenantId, afterName: request.query.cursor, limit });
      return { sources: page.map(toSourceJson), nextCursor: page.length === limit ? page[page.length - 1].name : null };
    },
  );

  app.get<{ Params: SourceNameParamsInput }>(
    '/v1/sources/:name',
    {
      schema: {
        tags,
        summary: 'Get a source: state, lag, counts accepted and rejected, last errors',
        security: BEARER_SECURITY,
        params: SourceNameParams,
        response: { 200: SourceJson, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const source = await deps.store.sourceGet({ tenantId: request.tenantId, name: request.params.name });
      if (!source) throw sourceNotFound(request.params.name);
      return toSourceJson(source);
    },
  );

  app.delete<{ Params: SourceNameParamsInput }>(
    '/v1/sources/:name',
    {
      schema: {
        tags,
        summary: 'Delete a source: the nodes stop reading it (the consumer group keeps its offsets)',
        security: BEARER_SECURITY,
        params: SourceNameParams,
        response: { 200: SourceJson, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { tenantId } = request;
      const source = await deps.store.sourceGet({ tenantId, name: request.params.name });
      if (!source || !(await deps.store.sourceDelete({ tenantId, name: request.params.name }))) throw sourceNotFound(request.params.name);
      return toSourceJson(source);
    },
  );
}
