/**
 * GET /v1/forecast: the due-load forecast. A tenant key sees its own scheduled events (by
 * destination if asked); the admin key sees every tenant's (by tenant if asked). Counts come
 * from the store's forecast index (Store.eventForecast), never from the rows; the window is
 * bounded by its bucket count (core/forecast.ts), and spikes follow the rule written there.
 *
 * A forecast's time follows the events in its window (seconds at 10,000,000), so a tenant's
 * forecasts run one at a time on a node (the admin's too), the next few waiting their turn and
 * the rest answered 429 (tenant-gate.ts): one tenant's forecasts never take every reader (the
 * PostgreSQL store's read pool, the SQLite store's reader thread) from another tenant's.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { formatDuration, parseDurationMs, parseTimeMs, TIME_MS_MAX } from '../../core/duration.ts';
import { BelfryError, invalid } from '../../core/errors.ts';
import { FORECAST_BUCKETS_MAX, forecastGrid, spikes } from '../../core/forecast.ts';
import type { ForecastBy, ForecastCount } from '../../store/store.ts';
import type { Authenticator } from '../auth.ts';
import type { AppDeps } from '../deps.ts';
import { isoTime } from '../event-json.ts';
import { BEARER_SECURITY, errorResponses } from '../schemas/common.ts';
import { ForecastQuery, ForecastResponse, type ForecastOutput, type ForecastQueryInput } from '../schemas/forecast.ts';
import { TenantGate } from '../tenant-gate.ts';

export const FORECAST_TO_DEFAULT = '1h';
export const FORECAST_BUCKET_DEFAULT = '1m';
const BUCKET_MS_MIN = 1_000;
const BUCKET_MS_MAX = 86_400_000;
/** Keys (destinations or tenants) a forecast names; the others are summed under OTHER_KEY. */
export const FORECAST_KEYS_MAX = 50;
export const OTHER_KEY = '(other)';
/** Forecasts of one tenant (or of the admin) running at once on a node. */
export const FORECASTS_IN_FLIGHT_PER_TENANT = 1;
/** Forecasts of one tenant waiting for their turn on a node, at most; more are answered 429. */
export const FORECASTS_WAITING_PER_TENANT_MAX = 4;
/** Retry-After of that 429, in seconds. */
const FORECAST_RETRY_AFTER_S = 1;

/** A time, epoch ms, or (relative to `base`) a duration; null when it is none of those. */
function timeOrOffset(value: string, base: number): number | null {
  if (/^\d{1,16}$/.test(value)) return parseTimeMs(Number(value));
  const offset = parseDurationMs(value);
  if (offset !== null) return Math.min(base + offset, TIME_MS_MAX);
  return parseTimeMs(value);
}

export interface ForecastWindow {
  fromMs: number;
  toMs: number;
  bucketMs: number;
}

/** The window a query asks for; 400s name the field. */
export function forecastWindow(q: ForecastQueryInput, now: number): ForecastWindow {
  const fromMs = q.from === undefined || q.from === 'now' ? now : timeOrOffset(q.from, now);
  if (fromMs === null)
    throw invalid('from', 'must be "now", an RFC 3339 time, epoch milliseconds or a duration from now ("10m")');
  const toMs = timeOrOffset(q.to ?? FORECAST_TO_DEFAULT, fromMs);
  if (toMs === null)
    throw invalid('to', 'must be an RFC 3339 time, epoch milliseconds or a duration after from ("24h")');
  if (toMs <= fromMs) throw invalid('to', 'must be after from');
  const bucketMs = parseDurationMs(q.bucket ?? FORECAST_BUCKET_DEFAULT);
  if (bucketMs === null || bucketMs < BUCKET_MS_MIN || bucketMs > BUCKET_MS_MAX)
    throw invalid('bucket', 'must be a duration from "1s" to "1d", such as "1m" or "1h"');
  return { fromMs, toMs, bucketMs };
}

/** The store's shape of a key as the API names it: a destination's name, an inline URL's origin, a tenant id. */
function keyName(key: string): string {
  if (key.startsWith('name:')) return key.slice(5);
  if (key.startsWith('url:')) return key.slice(4);
  return key;
}

/** The response from the store's counts over the grid. */
export function forecastJson(
  rows: ForecastCount[],
  grid: { startMs: number; bucketMs: number; buckets: number },
  window: ForecastWindow,
  by: ForecastBy,
): ForecastOutput {
  const counts = new Array<number>(grid.buckets).fill(0);
  const totals = new Map<string, number>();
  for (const r of rows) {
    counts[r.bucket] += r.n;
    if (r.key !== null) totals.set(r.key, (totals.get(r.key) ?? 0) + r.n);
  }
  const named = new Set(
    [...totals.entries()]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, FORECAST_KEYS_MAX)
      .map(([k]) => k),
  );
  const split: Record<string, number>[] | null = by === 'none' ? null : counts.map(() => ({}));
  if (split) {
    for (const r of rows) {
      const name = named.has(r.key!) ? keyName(r.key!) : OTHER_KEY;
      split[r.bucket][name] = (split[r.bucket][name] ?? 0) + r.n;
    }
  }
  const flags = spikes(counts);
  const buckets = counts.map((count, i) => ({
    at: isoTime(grid.startMs + i * grid.bucketMs),
    count,
    spike: flags[i],
    ...(split ? { by: split[i] } : {}),
  }));
  return {
    from: isoTime(window.fromMs),
    to: isoTime(window.toMs),
    bucket: formatDuration(window.bucketMs),
    by: by === 'none' ? null : by,
    total: counts.reduce((a, b) => a + b, 0),
    buckets,
    spikes: buckets.filter((b) => b.spike).map((b) => b.at),
  };
}

export function forecastRoutes(app: FastifyInstance, deps: AppDeps, auth: Authenticator): void {
  const gate = new TenantGate(FORECASTS_IN_FLIGHT_PER_TENANT, FORECASTS_WAITING_PER_TENANT_MAX);
  // A tenant key or the admin key: the admin's request keeps tenantId '' (every tenant).
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const who = await auth.identify(request.headers.authorization);
    request.tenantId = who.kind === 'tenant' ? who.tenantId : '';
  });
  app.get<{ Querystring: ForecastQueryInput }>(
    '/v1/forecast',
    {
      schema: {
        tags: ['events'],
        summary: 'The due-load forecast: scheduled events per bucket ahead',
        description: `Scheduled events per bucket of due time over [from, to), at most ${FORECAST_BUCKETS_MAX} buckets (400 naming \`bucket\` beyond). A tenant key sees its own (by=destination splits them); the admin key sees every tenant's (by=tenant splits them). Buckets start at whole multiples of the bucket size. A bucket is a spike when it holds at least 10 events and at least 4 times the median of the 5 buckets on either side. A node runs ${FORECASTS_IN_FLIGHT_PER_TENANT} forecast of a tenant at a time and lines up ${FORECASTS_WAITING_PER_TENANT_MAX} more; beyond, 429 with Retry-After. On PostgreSQL a forecast that runs past its time bound answers 503 (ask for a shorter window).`,
        security: BEARER_SECURITY,
        querystring: ForecastQuery,
        response: { 200: ForecastResponse, ...errorResponses(400, 401, 403, 429, 503) },
      },
    },
    async (request) => {
      const q = request.query;
      const admin = request.tenantId === '';
      const by: ForecastBy = q.by ?? 'none';
      if (by === 'tenant' && !admin)
        throw invalid('by', 'by=tenant needs the admin key; a tenant key may ask by=destination');
      if (by === 'destination' && admin)
        throw invalid('by', 'by=destination needs a tenant key; the admin key may ask by=tenant');
      const window = forecastWindow(q, deps.clock.now());
      const grid = forecastGrid(window.fromMs, window.toMs, window.bucketMs);
      if (!grid) {
        const n = Math.ceil((window.toMs - window.fromMs) / window.bucketMs);
        throw invalid(
          'bucket',
          `the window holds about ${n} buckets of this size; at most ${FORECAST_BUCKETS_MAX}: take larger buckets or a shorter window`,
        );
      }
      const turn = gate.enter(request.tenantId);
      if (!turn) {
        throw new BelfryError(
          'rate_limited',
          `${FORECASTS_IN_FLIGHT_PER_TENANT + FORECASTS_WAITING_PER_TENANT_MAX} forecasts of this ${admin ? 'key' : 'tenant'} are running or waiting on this node; wait for them`,
          [
            {
              field: 'forecast',
              message: 'too many forecasts in flight',
              limit: 'forecastsInFlightMax',
              max: FORECASTS_IN_FLIGHT_PER_TENANT + FORECASTS_WAITING_PER_TENANT_MAX,
            },
          ],
          { 'retry-after': String(FORECAST_RETRY_AFTER_S) },
        );
      }
      const leave = await turn;
      try {
        const rows = await deps.store.eventForecast({
          tenantId: admin ? null : request.tenantId,
          fromMs: grid.startMs,
          toMs: window.toMs,
          bucketMs: grid.bucketMs,
          by,
        });
        return forecastJson(rows, grid, window, by);
      } finally {
        leave();
      }
    },
  );
}
