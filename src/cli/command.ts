/** What every CLI command shares: its shape, its I/O seam, argument parsing and the usage error. */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A mistake on the command line; main prints it with a hint and exits 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  /** Where to find the right usage; main fills it in with the command's --help. */
  hint?: string;
}

/** The outside world as a command sees it, so commands can run in-process in tests. */
export interface Io {
  env: Record<string, string | undefined>;
  /** Writes one block of text to stdout, followed by a newline. */
  out(text: string): void;
  /** Writes one block of text to stderr, followed by a newline. */
  err(text: string): void;
  fetch: typeof globalThis.fetch;
  readFile(path: string): Promise<string>;
}

export interface Command {
  /** Full help text, printed for --help. */
  usage: string;
  run(argv: string[], io: Io): Promise<void>;
}

/** Options every API command accepts. */
export const COMMON_OPTIONS = {
  url: { type: 'string' },
  key: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Help lines for COMMON_OPTIONS; `keyEnv` names the variable the command reads its key from. */
export function commonUsage(keyEnv: 'BELFRY_API_KEY' | 'BELFRY_ADMIN_KEY'): string {
  return [
    '  --url <url>           Belfry base URL (env BELFRY_URL, default http://127.0.0.1:7070)',
    `  --key <key>           API key (env ${keyEnv})`,
    '  --json                print the raw JSON response',
    '  -h, --help            show this help',
  ].join('\n');
}

/** node:util parseArgs, with its errors turned into UsageError. */
export function parseCommandLine<T extends ParseArgsConfig>(config: T) {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** Returns the one positional argument a command takes, or throws a UsageError naming it. */
export function onePositional(positionals: string[], name: string): string {
  if (positionals.length === 0) throw new UsageError(`missing <${name}>`);
  if (positionals.length > 1) throw new UsageError(`unexpected argument: ${positionals[1]}`);
  const value = positionals[0];
  if (value === '') throw new UsageError(`<${name}> must not be empty`);
  return value;
}

/** Whether argv asks for help before any `--` terminator. */
export function wantsHelp(argv: string[]): boolean {
  for (const arg of argv) {
    if (arg === '--') return false;
    if (arg === '--help' || arg === '-h') return true;
  }
  return false;
}

/** Prints `body` as indented JSON. */
export function printJson(io: Io, body: unknown): void {
  io.out(JSON.stringify(body, null, 2));
}
