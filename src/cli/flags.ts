/** Flag values the commands share: durations, whole numbers, key=value pairs, JSON files, If-Match. */
import { parseDurationMs } from '../core/duration.ts';
import { printJson, UsageError, type Io } from './command.ts';
import { cell, renderFields, timeCell } from './table.ts';
import { parseJsonFlag } from './events-schedule.ts';

/** Throws a UsageError naming the first positional argument of a command that takes none. */
export function noPositionals(positionals: string[]): void {
  if (positionals.length > 0) throw new UsageError(`unexpected argument: ${positionals[0]}`);
}

/** A duration flag (250ms, 30s, 5m, 4h, 7d, or a number of ms) as the API takes it. */
export function durationFlag(flag: string, text: string): string | number {
  const value = /^\d+$/.test(text) ? Number(text) : text;
  if (parseDurationMs(value) === null)
    throw new UsageError(`${flag}: not a duration (250ms, 30s, 5m, 4h, 7d): ${text}`);
  return value;
}

/** A whole-number flag within [min, max]. */
export function intFlag(flag: string, text: string, min: number, max: number): number {
  const value = /^\d{1,10}$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max))
    throw new UsageError(`${flag}: expected a whole number from ${min} to ${max}: ${text}`);
  return value;
}

/** A positive number flag (a rate). */
export function numberFlag(flag: string, text: string): number {
  const value = /^\d+(\.\d+)?$/.test(text) ? Number(text) : Number.NaN;
  if (!(value > 0)) throw new UsageError(`${flag}: expected a positive number: ${text}`);
  return value;
}

/** `name=value` pairs of a repeatable flag, in order; the value may hold '='. */
export function pairsFlag(flag: string, pairs: string[]): Array<[name: string, value: string]> {
  return pairs.map((pair) => {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UsageError(`${flag}: expected name=value: ${pair}`);
    return [pair.slice(0, at).trim(), pair.slice(at + 1)];
  });
}

/** A comma-separated list flag (`a:9092,b:9092`), without empty items. */
export function listFlag(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/**
 * The `--if-match` value: the version `get` shows, as `3` or as its ETag `"3"` (the SDK quotes it).
 */
export function ifMatchFlag(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const match = /^(?:W\/)?"?(\d{1,15})"?$/.exec(text.trim());
  if (!match) throw new UsageError(`--if-match: expected a version such as 3 or "3": ${text}`);
  return Number(match[1]);
}

/** Reads a JSON object from a file ('-' for stdin) for a command's body. */
export async function readJsonObjectFile(
  flag: string,
  path: string,
  io: Pick<Io, 'readFile'>,
): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await io.readFile(path === '-' ? '/dev/stdin' : path);
  } catch (error) {
    throw new UsageError(`${flag}: cannot read ${path}: ${error instanceof Error ? error.message : error}`);
  }
  const value = parseJsonFlag(flag, text);
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new UsageError(`${flag}: expected a JSON object in ${path}`);
  return value as Record<string, unknown>;
}

/** The key flags of a command that acts as the admin with a tenant id, or as the calling tenant without. */
export const EITHER_KEY_USAGE = [
  '  --url <url>           Belfry base URL (env BELFRY_URL, default http://127.0.0.1:7070)',
  '  --key <key>           with <tenantId>: the admin key (env BELFRY_ADMIN_KEY); without: an API key (env BELFRY_API_KEY)',
  '  --json                print the raw JSON response',
  '  -h, --help            show this help',
].join('\n');

/** The options of a signing-secret rotation. */
export const SECRET_ROTATE_OPTIONS = { 'grace-period': { type: 'string' }, secret: { type: 'string' } } as const;

/** The `--grace-period` and `--secret` of a signing-secret rotation. */
export function secretRotateRequest(values: { 'grace-period'?: string; secret?: string }) {
  const request: { gracePeriod?: string | number; secret?: string } = {};
  if (values['grace-period'] !== undefined)
    request.gracePeriod = durationFlag('--grace-period', values['grace-period']);
  if (values.secret !== undefined) request.secret = values.secret;
  return request;
}

/** Told on stderr whenever a new signing secret is printed. */
export const SECRET_SHOWN_ONCE =
  'note: the secret is shown once and cannot be read back; give it to the receivers now.';

/** A rotation's answer: `--json` as the API gave it, else its fields (the name first, if it has one) and the note. */
export function printRotatedSecret(
  io: Io,
  json: boolean | undefined,
  rotated: { name?: string; secret: string; previousSecretsExpireAt: string | null },
): void {
  if (json) return printJson(io, rotated);
  io.out(
    renderFields([
      ...(rotated.name === undefined ? [] : [['name', cell(rotated.name)] as [string, string]]),
      ['secret', cell(rotated.secret)],
      ['old secrets until', timeCell(rotated.previousSecretsExpireAt)],
    ]),
  );
  io.err(SECRET_SHOWN_ONCE);
}

export const SECRET_ROTATE_OPTIONS_USAGE = `  --grace-period <dur>  how long the old secret signs too (default 24h, at most 7d)
  --secret <whsec_...>  the new secret (generated when left out)`;
