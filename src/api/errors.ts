/**
 * The one place where errors become responses: `{"error": {"code", "message", "details"}}`.
 *
 * Invariant: a 5xx means Belfry's fault. Anything a client can send (bad JSON, a wrong type, a
 * huge number, a control character in an id, an oversized body) ends as a 4xx naming what to fix;
 * only errors no rule here recognises become `500 internal`, and those are logged.
 */
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { BelfryError, type ErrorDetail } from '../core/errors.ts';
import { WriteQueueFullError } from '../store/group-commit.ts';
import { isStoreFull } from '../store/failure-kind.ts';
import { StoreUnavailableError } from '../store/store.ts';

/** An error response. `code` extends core's ErrorCode with the HTTP-only `unsupported_media_type`. */
export interface ApiError {
  status: number;
  code: string;
  message: string;
  details: ErrorDetail[];
  headers?: Record<string, string>;
}

/** One ajv error, as Fastify attaches it to a validation failure. */
export interface AjvErrorLike {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
  /** Set on errors about a property's name (propertyNames). */
  propertyName?: string;
}

/** "/retry/maxAttempts" → "retry.maxAttempts"; JSON-pointer escapes undone. */
function fieldOf(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

function join(...parts: string[]): string {
  return parts.filter((p) => p !== '').join('.');
}

function describe(err: AjvErrorLike): { field: string; message: string } {
  const base = fieldOf(err.instancePath);
  if (err.propertyName !== undefined) return { field: join(base, err.propertyName), message: 'is not an allowed name' };
  switch (err.keyword) {
    case 'additionalProperties':
      return {
        field: join(base, String(err.params.additionalProperty)),
        message: 'is not allowed (unknown field or invalid name)',
      };
    case 'required':
      return { field: join(base, String(err.params.missingProperty)), message: 'is required' };
    case 'discriminator':
      // A union chosen by a tag (a destination's `kind`): the tag is missing or names no branch.
      return {
        field: join(base, String(err.params.tag)),
        message: 'names no known kind (http, kafka, nats, amqp, redis)',
      };
    case 'type':
      return { field: base, message: `must be ${String(err.params.type).split(',').join(' or ')}` };
    case 'enum':
      return { field: base, message: `must be one of ${(err.params.allowedValues as unknown[]).join(', ')}` };
    case 'pattern':
      return { field: base, message: `must match the pattern ${String(err.params.pattern)}` };
    default:
      return { field: base, message: err.message ?? 'is invalid' };
  }
}

/**
 * Picks the error that best says what to fix (ajv runs with allErrors: false, but a union still
 * reports one error per branch): the deepest one; among equals, one that is not a bare type
 * mismatch; when all are type mismatches, their types joined ("must be string or object").
 */
function pickError(errors: AjvErrorLike[]): { field: string; message: string } {
  const named = errors.find((e) => e.propertyName !== undefined);
  if (named) return describe(named);
  const concrete = errors.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf');
  if (concrete.length === 0) return describe(errors[0]);
  const depth = (e: AjvErrorLike) => e.instancePath.split('/').length;
  const maxDepth = Math.max(...concrete.map(depth));
  const deepest = concrete.filter((e) => depth(e) === maxDepth);
  const specific = deepest.find((e) => e.keyword !== 'type');
  if (specific) return describe(specific);
  if (deepest.length === 1) return describe(deepest[0]);
  const types = [...new Set(deepest.flatMap((e) => String(e.params.type).split(',')))];
  return { field: fieldOf(deepest[0].instancePath), message: `must be ${types.join(' or ')}` };
}

/** A validation failure as an `invalid_request` naming the field; `where` is body, querystring, params... */
export function validationError(errors: AjvErrorLike[], where: string): BelfryError {
  const { field, message } = errors.length > 0 ? pickError(errors) : { field: '', message: 'is invalid' };
  const path = field === '' ? where : `${where}/${field.split('.').join('/')}`;
  return new BelfryError('invalid_request', `${path} ${message}`, [{ field: field === '' ? where : field, message }]);
}

const BY_FASTIFY_CODE: Record<string, (err: FastifyError, bodyBytesMax: number) => ApiError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: (err) => ({
    status: 415,
    code: 'unsupported_media_type',
    message: `unsupported content type: send application/json (${err.message})`,
    details: [{ field: 'content-type', message: 'must be application/json' }],
  }),
  FST_ERR_CTP_BODY_TOO_LARGE: (_err, bodyBytesMax) => ({
    status: 413,
    code: 'payload_too_large',
    message: `request body is larger than the limit of ${bodyBytesMax} bytes`,
    details: [{ field: 'body', message: `at most ${bodyBytesMax} bytes`, limitBytes: bodyBytesMax }],
  }),
  FST_ERR_CTP_INVALID_JSON_BODY: () => ({
    status: 400,
    code: 'invalid_request',
    message: 'body is not valid JSON',
    details: [{ field: 'body', message: 'is not valid JSON' }],
  }),
};

const MESSAGE_CHARS_MAX = 300;
/**
 * Retry-After of a full disk: space comes back when an operator (or a cleanup) frees it, not in
 * a blip; a client waiting a few seconds between tries does not keep a full node busy.
 */
export const STORAGE_FULL_RETRY_AFTER_S = 5;

const CODE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/** Maps any thrown value to the response it deserves; null means a 500. */
export function toApiError(err: unknown, bodyBytesMax: number): ApiError | null {
  if (err instanceof BelfryError) {
    const mapped: ApiError = { status: err.status, code: err.code, message: err.message, details: err.details };
    if (Object.keys(err.headers).length > 0) mapped.headers = err.headers;
    return mapped;
  }
  // Before StoreUnavailableError (a StoreFullError is one): the client should know why, and that
  // it takes longer than a blip. Nothing of the request was written.
  if (isStoreFull(err)) {
    return {
      status: 503,
      code: 'storage_full',
      message: 'the server is out of disk space: nothing was written; try again later',
      details: [],
      headers: { 'retry-after': String(STORAGE_FULL_RETRY_AFTER_S) },
    };
  }
  if (err instanceof StoreUnavailableError) {
    return {
      status: 503,
      code: 'unavailable',
      message: 'the store is unreachable; try again shortly',
      details: [],
      headers: { 'retry-after': '1' },
    };
  }
  if (err instanceof WriteQueueFullError) {
    return {
      status: 503,
      code: 'unavailable',
      message: `${err.message}; try again shortly`,
      details: [],
      headers: { 'retry-after': String(err.retryAfterS) },
    };
  }
  if (typeof err !== 'object' || err === null) return null;
  const fe = err as FastifyError & { validation?: AjvErrorLike[]; validationContext?: string };
  if (Array.isArray(fe.validation)) {
    const be = validationError(fe.validation, fe.validationContext ?? 'request');
    return { status: 400, code: be.code, message: be.message, details: be.details };
  }
  // The client hung up while its body was being read: nobody is left to answer, and it is not Belfry's fault.
  if (fe.code === 'ECONNRESET' || fe.code === 'ECONNABORTED') {
    return {
      status: 400,
      code: 'invalid_request',
      message: 'the client closed the connection before the request was complete',
      details: [],
    };
  }
  const byCode = fe.code ? BY_FASTIFY_CODE[fe.code] : undefined;
  if (byCode) return byCode(fe, bodyBytesMax);
  // Fastify's own client errors (empty JSON body, bad content-length, prototype poisoning, ...).
  const status = fe.statusCode;
  if (
    typeof status === 'number' &&
    status >= 400 &&
    status < 500 &&
    typeof fe.code === 'string' &&
    fe.code.startsWith('FST_')
  ) {
    return { status, code: CODE_BY_STATUS[status] ?? 'invalid_request', message: truncate(fe.message), details: [] };
  }
  // secure-json-parse rejects __proto__ / constructor.prototype with a SyntaxError that Fastify marks 400.
  if (err instanceof SyntaxError && status === 400) {
    return {
      status: 400,
      code: 'invalid_request',
      message: `body is not acceptable JSON: ${fe.message}`,
      details: [{ field: 'body', message: fe.message }],
    };
  }
  return null;
}

/** Fastify's messages may quote the URL: keep error bodies small. */
function truncate(message: string): string {
  return message.length > MESSAGE_CHARS_MAX ? message.slice(0, MESSAGE_CHARS_MAX) + '…' : message;
}

function send(reply: FastifyReply, e: ApiError): FastifyReply {
  const error: Record<string, unknown> = { code: e.code, message: e.message };
  if (e.details.length > 0) error.details = e.details;
  if (e.headers) for (const [name, value] of Object.entries(e.headers)) reply.header(name, value);
  return reply.status(e.status).type('application/json; charset=utf-8').send({ error });
}

/** Installs the error handler, the 404 handler, and the handler of malformed URLs. */
export function registerErrorHandling(app: FastifyInstance, logger: Logger, bodyBytesMax: number): void {
  app.setErrorHandler((err: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const mapped = toApiError(err, bodyBytesMax);
    if (mapped) return send(reply, mapped);
    logger.error({ err, reqId: request.id, method: request.method, url: request.url }, 'request failed');
    return send(reply, { status: 500, code: 'internal', message: 'internal error; it has been logged', details: [] });
  });
  app.setNotFoundHandler((request, reply) =>
    send(reply, {
      status: 404,
      code: 'not_found',
      message: `no route ${request.method} ${request.url.split('?')[0].slice(0, 200)}`,
      details: [],
    }),
  );
}

/** For Fastify's `frameworkErrors` option: malformed URLs get the same error shape. */
export function frameworkErrorHandler(err: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const mapped = toApiError(err, 0) ?? {
    status: 400,
    code: 'invalid_request',
    message: truncate(err.message),
    details: [],
  };
  void send(reply, mapped);
}

/**
 * For Fastify's `clientErrorHandler`: a request Node's HTTP parser refuses before Fastify sees it
 * (a raw non-ASCII byte or control character in the request line or a header, a bad
 * Content-Length or chunk, headers too large, a request that took too long) gets the same error
 * shape as every other error, then the connection is closed, as Node does.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let code = 'invalid_request';
  let message = 'the request is not valid HTTP/1.1 (request line, headers or body framing)';
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    code = 'request_timeout';
    message = 'the request did not arrive in time';
  } else if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    code = 'headers_too_large';
    message = 'the request headers are larger than the server accepts';
  }
  const body = JSON.stringify({ error: { code, message } });
  if (socket.writable) {
    const reason =
      status === 400 ? 'Bad Request' : status === 408 ? 'Request Timeout' : 'Request Header Fields Too Large';
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** An error as one item of a batch answer (ItemError): its code, message and details. */
export function itemError(err: BelfryError): { code: string; message: string; details: ErrorDetail[] } {
  return { code: err.code, message: err.message, details: err.details };
}
