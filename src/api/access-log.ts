/**
 * The access log (off by default: `--access-log`, `BELFRY_ACCESS_LOG=1`, file key `accessLog`):
 * one info line per answered request, `{"msg":"request","method","route","status","ms","tenant"}`.
 * `route` is the route's pattern (`/v1/events/:id`), never the path itself, so ids and query
 * strings stay out of the log and lines group by route; `null` when no route matched (a 404).
 * `tenant` is the authenticated tenant's id, `null` for the admin key, operations routes and
 * requests refused before authentication. Off, it costs nothing: the hook is not registered.
 */
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Logger } from 'pino';

export interface AccessLogLine {
  method: string;
  route: string | null;
  status: number;
  /** From the request's arrival to the end of its answer, in milliseconds (0.1 ms precision). */
  ms: number;
  tenant: string | null;
}

export const ACCESS_LOG_MESSAGE = 'request';

/** Fastify's onResponse hook writing one access log line per request to `logger`. */
export function accessLogHook(logger: Logger) {
  return (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    const line: AccessLogLine = {
      method: request.method,
      route: request.routeOptions.url ?? null,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      tenant: request.tenantId === '' ? null : request.tenantId,
    };
    logger.info(line, ACCESS_LOG_MESSAGE);
    done();
  };
}
