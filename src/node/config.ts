/**
 * Node configuration, resolved and validated once: flags override environment variables, which
 * override a JSON config file (`--config belfry.json`), which overrides the defaults below.
 *
 * | flag               | env                       | file key          | default        |
 * | --port             | BELFRY_PORT               | port              | 7070           |
 * | --host             | BELFRY_HOST               | host              | 127.0.0.1      |
 * | --data             | BELFRY_DATA_DIR           | dataDir           | ./belfry-data  |
 * | --store            | BELFRY_STORE              | store             | sqlite         |
 * | --admin-key        | BELFRY_ADMIN_KEY          | adminKey          | generated once |
 * | --allow-hosts      | BELFRY_ALLOW_HOSTS        | allowHosts        | (none)         |
 * | --log-level        | BELFRY_LOG_LEVEL          | logLevel          | info           |
 * | --access-log       | BELFRY_ACCESS_LOG         | accessLog         | off            |
 * | --shard-count      | BELFRY_SHARD_COUNT        | shardCount        | 256            |
 * | --lookahead        | BELFRY_LOOKAHEAD          | lookahead         | 3s             |
 * | --shutdown-timeout | BELFRY_SHUTDOWN_TIMEOUT   | shutdownTimeout   | 30s            |
 * | --node-id          | BELFRY_NODE_ID            | nodeId            | random per run |
 * | --delivery-threads | BELFRY_DELIVERY_THREADS   | deliveryThreads   | 1 (0 on 1 core)|
 * | --schedule-horizon | BELFRY_SCHEDULE_HORIZON   | scheduleHorizon   | 10s            |
 * | --body-bytes-in-flight-max | BELFRY_BODY_BYTES_IN_FLIGHT_MAX | bodyBytesInFlightMax | 33554432 (32 MiB) |
 *
 * Plus the default of every per-tenant limit (src/core/tenant-limits.ts), each overridable per tenant
 * through the admin API: flag `--<kebab-name>`, env `BELFRY_<SNAKE_NAME>`, file key `<name>`:
 *   --payload-bytes-max, --batch-events-max, --pending-events-max, --schedule-requests-per-second,
 *   --schedule-ahead-max (a duration), --id-length-max, --header-value-length-max, --destinations-max.
 *
 * Retention (src/core/retention.ts, src/maintenance/cleaner.ts): the default period per terminal
 * state, each overridable per tenant through the admin API (`--retention-succeeded 7d`, env
 * `BELFRY_RETENTION_SUCCEEDED`, file key `retentionSucceeded`; also canceled, discarded,
 * archived), and the cleaner's bounds: --retention-interval (pause between passes, default 1m),
 * --retention-batch-size (events per delete batch, default 200), --retention-deletes-per-second
 * (default 2000).
 *
 * SETTINGS below is the whole list, with each setting's help: `belfry start --help` prints it.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import {
  DEFAULT_TENANT_LIMITS,
  formatLimit,
  LIMIT_SPECS,
  limitBounds,
  parseLimitValue,
  type LimitName,
  type TenantLimits,
} from '../core/tenant-limits.ts';
import { allowEntryError } from '../core/address.ts';
import { formatDuration, parseDurationMs } from '../core/duration.ts';
import {
  parseRetentionMs,
  RETENTION_DEFAULTS,
  RETENTION_STATES,
  type RetentionPeriods,
  type RetentionState,
} from '../core/retention.ts';
import {
  CLEANER_BATCH_SIZE_MAX,
  CLEANER_DELETES_PER_SECOND_MAX,
  DEFAULT_CLEANER_OPTIONS,
} from '../maintenance/cleaner.ts';
import { SHARD_COUNT_DEFAULT } from '../core/shard.ts';
import { DELIVERY_THREADS_MAX } from '../channels/http/delivery-threads.ts';
import { BODY_BYTES_IN_FLIGHT_MAX_DEFAULT, BODY_BYTES_IN_FLIGHT_MAX_MIN } from '../api/body-limits.ts';

export interface NodeConfig {
  port: number;
  host: string;
  dataDir: string;
  /** `sqlite`, or a `postgres://` URL. */
  store: string;
  /** Null: read from the data dir, or generate and print once. */
  adminKey: string | null;
  allowHosts: string[];
  logLevel: string;
  /** One info log line per answered request (api/access-log.ts). */
  accessLog: boolean;
  shardCount: number;
  lookaheadMs: number;
  shutdownTimeoutMs: number;
  nodeId: string | null;
  /**
   * Threads that make the HTTP deliveries (src/channels/http/delivery-threads.ts); 0 makes them on
   * the event loop, beside the timer and the claims.
   */
  deliveryThreads: number;
  /** How far ahead recurring schedules' occurrences are made into events (schedules/materialiser.ts). */
  scheduleHorizonMs: number;
  /** Bytes of request bodies being received and handled at once on this node (api/body-limits.ts); past it 503. */
  bodyBytesInFlightMax: number;
  /** Default per-tenant limits. */
  limits: TenantLimits;
  /** Default retention periods per terminal state (a tenant may have its own). */
  retention: RetentionPeriods;
  /** The cleaner: pause between passes, events per delete batch, events deleted per second at most. */
  retentionIntervalMs: number;
  retentionBatchSize: number;
  retentionDeletesPerSecond: number;
}

export const DEFAULT_CONFIG: NodeConfig = {
  port: 7070,
  host: '127.0.0.1',
  dataDir: './belfry-data',
  store: 'sqlite',
  adminKey: null,
  allowHosts: [],
  logLevel: 'info',
  accessLog: false,
  shardCount: SHARD_COUNT_DEFAULT,
  lookaheadMs: 3_000,
  shutdownTimeoutMs: 30_000,
  nodeId: null,
  // A thread of its own only where there is a second core to run it.
  deliveryThreads: availableParallelism() > 1 ? 1 : 0,
  scheduleHorizonMs: 10_000,
  bodyBytesInFlightMax: BODY_BYTES_IN_FLIGHT_MAX_DEFAULT,
  limits: DEFAULT_TENANT_LIMITS,
  retention: RETENTION_DEFAULTS,
  retentionIntervalMs: DEFAULT_CLEANER_OPTIONS.intervalMs,
  retentionBatchSize: DEFAULT_CLEANER_OPTIONS.batchSizeMax,
  retentionDeletesPerSecond: DEFAULT_CLEANER_OPTIONS.deletesPerSecondMax,
};

/**
 * One setting: its flag, env variable and file key, how to parse a string or file value, and how
 * `belfry start --help` describes it (the help is made from this table, so it lists every setting).
 */
interface Setting {
  key: keyof NodeConfig;
  flag: string;
  env: string;
  parse(value: unknown): unknown;
  /** The value's placeholder in the help (`<port>`, `<duration>`). */
  arg: string;
  /** What it does, for the help. */
  help: string;
  /** The default as the help shows it, when the default value alone does not say it. */
  defaultText?: string;
  /** Set for a per-tenant limit default: which one (`key` is then `limits`). */
  limit?: LimitName;
  /** Set for a default retention period: which state (`key` is then `retention`). */
  retention?: RetentionState;
  /** The key in the config file when it is not `key`. */
  fileKey?: string;
  /** An on/off setting: its flag takes no value (present: on); env and file take true/false, 1/0. */
  boolean?: true;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

function fail(source: string, message: string): never {
  throw new ConfigError(`${source}: ${message}`);
}

const asString = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);
const asInt = (min: number, max: number) => (v: unknown) => {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : NaN;
  return Number.isInteger(n) && n >= min && n <= max ? n : undefined;
};
const asDuration = (v: unknown) => parseDurationMs(v) ?? undefined;
const asList = (v: unknown) =>
  Array.isArray(v) && v.every((x) => typeof x === 'string')
    ? v
    : typeof v === 'string'
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : undefined;
/** Hosts, addresses and CIDR ranges; undefined (an error naming the setting) when one is invalid. */
const asAllowList = (v: unknown) => {
  const list = asList(v);
  return list && list.every((entry) => allowEntryError(entry) === null) ? list : undefined;
};
const asDurationFrom1s = (v: unknown) => {
  const ms = parseDurationMs(v);
  return ms !== null && ms >= 1_000 ? ms : undefined;
};
const capitalised = (s: string) => s[0].toUpperCase() + s.slice(1);
const asBoolean = (v: unknown) => {
  if (typeof v === 'boolean') return v;
  if (typeof v !== 'string') return undefined;
  const text = v.toLowerCase();
  return ['1', 'true', 'yes', 'on'].includes(text)
    ? true
    : ['0', 'false', 'no', 'off'].includes(text)
      ? false
      : undefined;
};
const asLevel = (v: unknown) =>
  typeof v === 'string' && ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(v) ? v : undefined;

/** What each per-tenant limit's default bounds, for the help (a limit added without one fails the type check). */
const LIMIT_HELP: Record<LimitName, string> = {
  payloadBytesMax: "bytes of one event's payload",
  batchEventsMax: 'events in one batch',
  pendingEventsMax: 'events not yet finished (a quota)',
  scheduleRequestsPerSecond: 'scheduling requests per second, per node (429 past it; Kafka source messages count too)',
  scheduleAheadMsMax: 'how far ahead an event may be due',
  idLengthMax: 'characters of an id or group',
  headerValueLengthMax: 'characters of a header value',
  destinationsMax: 'registered destinations (a quota)',
};

const SETTINGS: Setting[] = [
  {
    key: 'port',
    flag: 'port',
    env: 'BELFRY_PORT',
    parse: asInt(0, 65535),
    arg: '<port>',
    help: 'HTTP port (0 picks a free one; the chosen port is logged)',
  },
  { key: 'host', flag: 'host', env: 'BELFRY_HOST', parse: asString, arg: '<address>', help: 'address to bind' },
  {
    key: 'dataDir',
    flag: 'data',
    env: 'BELFRY_DATA_DIR',
    parse: asString,
    arg: '<dir>',
    help: 'SQLite directory (the database, the admin key, the lock)',
  },
  {
    key: 'store',
    flag: 'store',
    env: 'BELFRY_STORE',
    parse: (v) => (v === 'sqlite' || (typeof v === 'string' && /^postgres(ql)?:\/\//.test(v)) ? v : undefined),
    arg: 'sqlite|<postgres://...>',
    help: 'sqlite, or a PostgreSQL URL (?schema=name picks the schema): every node on the same URL forms one cluster',
  },
  {
    key: 'adminKey',
    flag: 'admin-key',
    env: 'BELFRY_ADMIN_KEY',
    parse: (v) => (typeof v === 'string' && v.length >= 16 ? v : undefined),
    arg: '<key>',
    help: 'the admin API key (16 characters or more)',
    defaultText: 'generated at the first start, printed once, saved in <data>/admin.key',
  },
  {
    key: 'allowHosts',
    flag: 'allow-hosts',
    env: 'BELFRY_ALLOW_HOSTS',
    parse: asAllowList,
    arg: '<list>',
    help: 'comma list of hosts, addresses and CIDRs that destinations may reach despite the private-address guard',
  },
  {
    key: 'logLevel',
    flag: 'log-level',
    env: 'BELFRY_LOG_LEVEL',
    parse: asLevel,
    arg: '<level>',
    help: 'fatal, error, warn, info, debug, trace or silent',
  },
  {
    key: 'accessLog',
    flag: 'access-log',
    env: 'BELFRY_ACCESS_LOG',
    parse: asBoolean,
    boolean: true,
    arg: '',
    help: 'one info log line per request: method, route, status, ms, tenant (env and file: true/false or 1/0)',
    defaultText: 'off',
  },
  {
    key: 'shardCount',
    flag: 'shard-count',
    env: 'BELFRY_SHARD_COUNT',
    parse: asInt(1, 65536),
    arg: '<n>',
    help: 'shards per cluster, fixed for the life of a store (the first node records it)',
  },
  {
    key: 'lookaheadMs',
    flag: 'lookahead',
    env: 'BELFRY_LOOKAHEAD',
    parse: asDuration,
    arg: '<duration>',
    help: 'how far ahead the scheduler loads due events into memory',
  },
  {
    key: 'shutdownTimeoutMs',
    flag: 'shutdown-timeout',
    env: 'BELFRY_SHUTDOWN_TIMEOUT',
    parse: asDuration,
    arg: '<duration>',
    help: 'how long SIGTERM waits for deliveries in flight',
  },
  {
    key: 'nodeId',
    flag: 'node-id',
    env: 'BELFRY_NODE_ID',
    parse: asString,
    arg: '<id>',
    help: "this node's name in leases and logs",
    defaultText: 'random per run',
  },
  {
    key: 'deliveryThreads',
    flag: 'delivery-threads',
    env: 'BELFRY_DELIVERY_THREADS',
    parse: asInt(0, DELIVERY_THREADS_MAX),
    arg: '<n>',
    help: `threads that make the HTTP deliveries (0 to ${DELIVERY_THREADS_MAX}; 0: on the event loop)`,
    defaultText: '1 (0 on a machine with one core)',
  },
  {
    key: 'scheduleHorizonMs',
    flag: 'schedule-horizon',
    env: 'BELFRY_SCHEDULE_HORIZON',
    parse: asDurationFrom1s,
    arg: '<duration>',
    help: "how far ahead recurring schedules' occurrences are made into events (at least 1s)",
  },
  {
    key: 'bodyBytesInFlightMax',
    flag: 'body-bytes-in-flight-max',
    env: 'BELFRY_BODY_BYTES_IN_FLIGHT_MAX',
    parse: asInt(BODY_BYTES_IN_FLIGHT_MAX_MIN, Number.MAX_SAFE_INTEGER),
    arg: '<bytes>',
    help: `bytes of request bodies the node receives and handles at once (at least ${BODY_BYTES_IN_FLIGHT_MAX_MIN}); past it 503`,
  },
  ...LIMIT_SPECS.map(
    (spec): Setting => ({
      key: 'limits',
      limit: spec.key,
      fileKey: spec.name,
      flag: spec.name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`),
      env: `BELFRY_${spec.name.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`,
      parse: (v) => parseLimitValue(spec, v) ?? undefined,
      arg: spec.kind === 'duration' ? '<duration>' : spec.kind === 'bytes' ? '<bytes>' : '<n>',
      help: `default per-tenant limit: ${LIMIT_HELP[spec.key]}; ${limitBounds(spec)}`,
    }),
  ),
  ...RETENTION_STATES.map(
    (state): Setting => ({
      key: 'retention',
      retention: state,
      fileKey: `retention${capitalised(state)}`,
      flag: `retention-${state}`,
      env: `BELFRY_RETENTION_${state.toUpperCase()}`,
      parse: (v) => parseRetentionMs(v) ?? undefined,
      arg: '<duration>',
      help: `default per-tenant retention of ${state} events and their traces (1s to 3650d)`,
    }),
  ),
  {
    key: 'retentionIntervalMs',
    flag: 'retention-interval',
    env: 'BELFRY_RETENTION_INTERVAL',
    parse: asDurationFrom1s,
    arg: '<duration>',
    help: 'pause between two passes of the retention cleaner (leader only)',
  },
  {
    key: 'retentionBatchSize',
    flag: 'retention-batch-size',
    env: 'BELFRY_RETENTION_BATCH_SIZE',
    parse: asInt(1, CLEANER_BATCH_SIZE_MAX),
    arg: '<n>',
    help: `events deleted per batch, each batch one transaction (1 to ${CLEANER_BATCH_SIZE_MAX})`,
  },
  {
    key: 'retentionDeletesPerSecond',
    flag: 'retention-deletes-per-second',
    env: 'BELFRY_RETENTION_DELETES_PER_SECOND',
    parse: asInt(1, CLEANER_DELETES_PER_SECOND_MAX),
    arg: '<n>',
    help: 'events the cleaner deletes per second at most',
  },
];

const FILE_KEYS: Record<string, keyof NodeConfig> = {
  lookahead: 'lookaheadMs',
  shutdownTimeout: 'shutdownTimeoutMs',
  scheduleHorizon: 'scheduleHorizonMs',
  retentionInterval: 'retentionIntervalMs',
};

/** A setting's key in the config file. */
function fileKeyOf(s: Setting): string {
  return s.fileKey ?? Object.keys(FILE_KEYS).find((k) => FILE_KEYS[k] === s.key) ?? s.key;
}

/** Every setting's names: its flag (without `--`), environment variable and config file key. */
export const SETTING_NAMES: readonly { flag: string; env: string; fileKey: string }[] = SETTINGS.map((s) => ({
  flag: s.flag,
  env: s.env,
  fileKey: fileKeyOf(s),
}));

/** A setting's default as the help shows it. */
function defaultTextOf(s: Setting): string {
  if (s.defaultText !== undefined) return s.defaultText;
  if (s.limit) return formatLimit(LIMIT_SPECS.find((x) => x.key === s.limit)!, DEFAULT_CONFIG.limits[s.limit]);
  if (s.retention) return formatDuration(DEFAULT_CONFIG.retention[s.retention]);
  const value = DEFAULT_CONFIG[s.key];
  if (Array.isArray(value)) return value.length === 0 ? 'none' : value.join(',');
  if (typeof value === 'number' && s.key.endsWith('Ms')) return formatDuration(value);
  return String(value);
}

/** Where the flag and its placeholder end and the description begins in the help. */
const HELP_COLUMN = 40;

/** `belfry start --help`: every setting of the table above, with its environment variable, file key and default. */
export function startUsage(): string {
  const option = (flags: string, help: string, names?: string) => {
    const head = `  ${flags}`;
    const first =
      head.length < HELP_COLUMN ? head.padEnd(HELP_COLUMN) + help : `${head}\n${' '.repeat(HELP_COLUMN)}${help}`;
    return names === undefined ? first : `${first}\n${' '.repeat(HELP_COLUMN)}${names}`;
  };
  return [
    'Usage: belfry start [options]',
    '',
    'Runs a Belfry node until SIGTERM or SIGINT, then stops gracefully and exits 0.',
    'Each option is also an environment variable and a key of the JSON config file;',
    'flags override the environment, which overrides the file, which overrides the defaults.',
    '',
    'Options:',
    option('--config <file>', 'a JSON config file, keys as below', 'env BELFRY_CONFIG'),
    ...SETTINGS.map((s) =>
      option(
        s.arg === '' ? `--${s.flag}` : `--${s.flag} ${s.arg}`,
        s.help,
        `env ${s.env} · file key ${fileKeyOf(s)} · default ${defaultTextOf(s)}`,
      ),
    ),
    option('-h, --help', 'show this help'),
  ].join('\n');
}

/** Resolves the configuration from argv (after the command), an environment and the config file it names. */
export function resolveConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): NodeConfig {
  const options: Record<string, { type: 'string' | 'boolean' }> = { config: { type: 'string' } };
  for (const s of SETTINGS) options[s.flag] = { type: s.boolean ? 'boolean' : 'string' };
  let flags: Record<string, string | boolean | undefined>;
  try {
    flags = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values as Record<
      string,
      string | boolean | undefined
    >;
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  const out: NodeConfig = { ...DEFAULT_CONFIG };
  const file = (flags.config as string | undefined) ?? env.BELFRY_CONFIG;
  if (file) applyFile(out, file);
  for (const s of SETTINGS) {
    const raw = env[s.env];
    if (raw !== undefined && raw !== '') set(out, s, raw, `environment variable ${s.env}`);
  }
  for (const s of SETTINGS) {
    const raw = flags[s.flag];
    if (raw !== undefined) set(out, s, raw, `flag --${s.flag}`);
  }
  return out;
}

function set(out: NodeConfig, s: Setting, raw: unknown, source: string): void {
  const value = s.parse(raw);
  if (s.limit) {
    const spec = LIMIT_SPECS.find((x) => x.key === s.limit)!;
    if (value === undefined)
      fail(source, `invalid value ${JSON.stringify(raw)} for ${spec.name}: must be ${limitBounds(spec)}`);
    out.limits = { ...out.limits, [s.limit]: value };
    return;
  }
  if (s.retention) {
    if (value === undefined)
      fail(
        source,
        `invalid value ${JSON.stringify(raw)} for retention.${s.retention}: must be a duration from 1s to 3650d, such as "7d"`,
      );
    out.retention = { ...out.retention, [s.retention]: value };
    return;
  }
  if (value === undefined) fail(source, `invalid value ${JSON.stringify(raw)} for ${s.key}`);
  (out as unknown as Record<string, unknown>)[s.key] = value;
}

function applyFile(out: NodeConfig, path: string): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    fail(`config file ${path}`, (err as Error).message);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    fail(`config file ${path}`, 'must hold a JSON object');
  for (const [fileKey, raw] of Object.entries(parsed)) {
    const key = FILE_KEYS[fileKey] ?? fileKey;
    const s = SETTINGS.find((x) => (x.fileKey ?? x.key) === key);
    if (!s) fail(`config file ${path}`, `unknown setting "${fileKey}"`);
    set(out, s, raw, `config file ${path}, key "${fileKey}"`);
  }
}
