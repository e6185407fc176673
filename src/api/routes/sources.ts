/**
 * /v1/sources: schedule requests read from a Kafka topic (docs/sources.md). PUT creates or
 * replaces (idempotent; a replace restarts the readers on the new spec, the consumer group keeps
 * its offsets). The SASL password is write-only, and SASL PLAIN goes only over TLS unless the body
 * says `allowInsecureCredentials`. Each source has its own consumer group unless it names one. The nodes find new, changed and deleted sources
 * in the store (sources/manager.ts) and report their counts, errors and lag there. Each route
 * checks its request, calls the SourceService (sources/service.ts) and answers with the source's JSON.
 */
import type { FastifyInstance } from 'fastify';
import type { AddressPolicy } from '../../core/address.ts';
import { kafkaSpec } from '../../channels/kafka/spec.ts';
import { optInJson, type InsecureCredentialsOptIn } from '../../channels/broker/config.ts';
import { defaultSourceGroupId, type SourceService } from '../../sources/index.ts';
import type { SourceRecord, SourceSpec } from '../../store/sources.ts';
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

const LIST_LIMIT_DEFAULT = 100;

/**
 * The body as a stored spec; broker hosts pass the private-address guard (400 naming `brokers.N`),
 * and SASL PLAIN without `ssl` needs `allowInsecureCredentials` (400 naming `sasl.mechanism`).
 */
export function toSourceSpec(
  body: SourcePutInput,
  policy: AddressPolicy,
  tenantId: string,
  name: string,
): SourceSpec & InsecureCredentialsOptIn {
  const target = kafkaSpec.parse(
    {
      brokers: body.brokers,
      topic: body.topic,
      sasl: body.sasl,
      ssl: body.ssl,
      allowInsecureCredentials: body.allowInsecureCredentials,
    },
    policy,
  );
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

export function sourceRoutes(app: FastifyInstance, sources: SourceService, addressPolicy: AddressPolicy): void {
  const tags = ['sources'];
  app.put<{ Params: SourceNameParamsInput; Body: SourcePutInput }>(
    '/v1/sources/:name',
    {
      schema: {
        tags,
        summary: 'Create or replace a Kafka source',
        description:
          '201 when created, 200 when replaced. Each message of the topic holds one event body (as for POST /v1/events) or {"events": [...]}; ' +
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
      const spec = toSourceSpec(request.body, addressPolicy, tenantId, request.params.name);
      const result = await sources.put(tenantId, request.params.name, spec);
      reply.status(result.created ? 201 : 200);
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
      const page = await sources.list(request.tenantId, request.query.cursor, limit);
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
      return toSourceJson(await sources.get(request.tenantId, request.params.name));
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
      return toSourceJson(await sources.delete(request.tenantId, request.params.name));
    },
  );
}
