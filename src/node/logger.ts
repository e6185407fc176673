/**
 * The node's logger: pino JSON lines, with every field that may hold a secret redacted, so a
 * future log call that passes a request, a config, a destination or a key record along cannot
 * leak it. What is secret: API keys and the admin key, signing secrets, Authorization headers.
 * Nothing Belfry logs today carries one (test/e2e/secret-logs.test.ts greps a full run); this is
 * the second line of defence.
 */
import { pino, type Logger } from 'pino';

export const REDACTED = '[redacted]';

/** Field paths pino censors, at the top level and one level down (pino paths are exact). */
export const REDACT_PATHS = [
  'adminKey',
  'key',
  'secret',
  'secrets',
  'signingSecret',
  'signingSecrets',
  'hash',
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  '*.adminKey',
  '*.key',
  '*.secret',
  '*.secrets',
  '*.signingSecret',
  '*.signingSecrets',
  '*.hash',
  '*.authorization',
  '*.headers.authorization',
];

export function createLogger(level: string, nodeId: string, destination?: pino.DestinationStream): Logger {
  const options = { level, base: { node: nodeId }, redact: { paths: REDACT_PATHS, censor: REDACTED } };
  return destination ? pino(options, destination) : pino(options);
}
