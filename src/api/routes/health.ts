/** Operational routes, without auth: liveness, readiness, Prometheus metrics, the OpenAPI document. */
import type { FastifyInstance } from 'fastify';
import { EVENT_STATES } from '../../core/event.ts';
import type { AppDeps } from '../deps.ts';
import { HealthResponse, ReadyResponse } from '../schemas/health.ts';

/**
 * Sets the per-state gauge from the count sampler's latest sample, and its age: a scrape never
 * counts the table. Before the first sample the gauges stay unset.
 */
function refreshEventGauge(deps: AppDeps): void {
  const sample = deps.counts.latest();
  if (!sample) return;
  for (const state of EVENT_STATES) deps.metrics.eventsPending.set({ state }, sample.byState[state] ?? 0);
  deps.metrics.eventsSampleAgeSeconds.set((deps.counts.ageMs() ?? 0) / 1000);
  deps.metrics.eventsSampleDurationSeconds.set(sample.durationMs / 1000);
}

export function healthRoutes(app: FastifyInstance, deps: AppDeps): void {
  const tags = ['operations'];
  app.get('/healthz', { schema: { tags, summary: 'Liveness', response: { 200: HealthResponse } } }, async () => ({
    status: 'ok' as const,
    version: deps.version,
  }));

  // Unauthenticated: the reasons are stable codes (starting, shutting_down, no_shards,
  // store_unreachable, storage_full, store_damaged), never an error's text; errors go to the log.
  app.get(
    '/readyz',
    {
      schema: {
        tags,
        summary: 'Readiness: store reachable with room to write, shards owned',
        response: { 200: ReadyResponse, 503: ReadyResponse },
      },
    },
    async (_request, reply) => {
      let ready: { ok: boolean; reasons: string[] };
      try {
        ready = await deps.ready();
      } catch (err) {
        deps.logger.warn({ err }, 'readiness check failed');
        ready = { ok: false, reasons: ['readiness_check_failed'] };
      }
      reply.status(ready.ok ? 200 : 503);
      return { status: ready.ok ? ('ready' as const) : ('not_ready' as const), reasons: ready.reasons };
    },
  );

  app.get('/metrics', { schema: { tags, summary: 'Prometheus metrics (text format)' } }, async (_request, reply) => {
    refreshEventGauge(deps);
    const text = await deps.metrics.registry.metrics();
    return reply.type(deps.metrics.registry.contentType).send(text);
  });

  app.get('/openapi.json', { schema: { tags, summary: 'This OpenAPI 3.1 document' } }, async () => app.swagger());
}
