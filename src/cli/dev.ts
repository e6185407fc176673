/**
 * `belfry dev`: Belfry to try on this machine, delivering at once. Never part of `belfry start`.
 *
 * One process runs a node on SQLite in its own data dir (default ./belfry-dev, never a dir that
 * `belfry start` made), served on loopback only, with webhooks to loopback addresses allowed; an
 * echo receiver on loopback (dev-echo.ts) registered as the destination `echo`; and a tenant `dev`
 * with an API key. The tenant, key and secrets are kept in <data>/dev.json and reused at the next
 * start; <data>/dev.env exports the node's URL and keys for a shell (`. belfry-dev/dev.env`).
 * It prints all of it with a curl that schedules an event five seconds ahead to the receiver.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { newSecretToken, newWebhookSecret } from '../core/ids.ts';
import { ConfigError, resolveConfig, type NodeConfig } from '../node/config.ts';
import { startNode, type BelfryNode } from '../node/node.ts';
import { belfryVersion } from '../node/version.ts';
import { ApiClient, ApiError } from './client.ts';
import { EchoReceiver } from './dev-echo.ts';

/** Where dev puts things unless told otherwise; flags, environment variables and a config file override them. */
const DEV_DEFAULTS = { BELFRY_DATA_DIR: './belfry-dev', BELFRY_LOG_LEVEL: 'warn' };
export const ECHO_PORT_DEFAULT = 7071;
/** Webhooks of a dev node may reach these, besides what --allow-hosts adds. */
export const LOOPBACK_ALLOWED = ['127.0.0.0/8', '::1', 'localhost'];
const LOOPBACK_HOST = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/;
export const STATE_FILE = 'dev.json';
export const ENV_FILE = 'dev.env';
const TENANT_NAME = 'dev';
const ECHO_DESTINATION = 'echo';

export const DEV_USAGE = `Usage: belfry dev [options]

For trying Belfry on this machine; not for production (that is belfry start). Runs, in one process:
  - a node on SQLite in ./belfry-dev, on loopback only, whose webhooks may reach loopback
    addresses (127.0.0.0/8, ::1, localhost; production needs --allow-hosts for that);
  - an echo receiver on 127.0.0.1:${ECHO_PORT_DEFAULT}, the destination "echo": it checks each delivery's
    signature, prints it as one line and keeps the last 100 (GET / lists them,
    GET /deliveries/<id>?wait=30s waits for one; POST ...?status=503 answers 503, to try retries);
  - a tenant "dev" with an API key, made at the first start and reused after.
It prints the URLs, the keys and a curl that schedules an event five seconds ahead to the echo
receiver, and saves them in <data>/dev.json and <data>/dev.env (. belfry-dev/dev.env exports
BELFRY_URL, BELFRY_API_KEY and BELFRY_ECHO_URL; the admin key is in <data>/admin.key). Ctrl-C stops.

Options:
  --echo-port <port>    the echo receiver's port (env BELFRY_DEV_ECHO_PORT; 0 picks a free one;
                        default ${ECHO_PORT_DEFAULT})
  Every option of belfry start too (belfry start --help), with these defaults: --data ./belfry-dev,
  --log-level warn. --host must be a loopback address and --store sqlite.
  -h, --help            show this help`;

/** What dev keeps between starts, in <data>/dev.json (mode 0600). */
interface DevState {
  tenantId: string;
  /** The tenant's signing secret: it signs deliveries to inline URLs. */
  tenantSigningSecret: string;
  apiKey: string;
  /** The echo destination's signing secret. */
  echoSecret: string;
}

/** A reason dev will not start, told on stderr with exit code 2. */
class DevRefusal extends Error {}

export async function runDev(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(DEV_USAGE + '\n');
    return;
  }
  let settings: { config: NodeConfig; echoPort: number };
  try {
    settings = devSettings(argv, process.env);
    prepareDevDataDir(settings.config);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof DevRefusal) {
      process.stderr.write(`belfry dev: ${err.message}\n\nRun 'belfry dev --help' for usage.\n`);
      process.exit(2);
    }
    throw err;
  }
  const { config, echoPort } = settings;
  const saved = readState(config.dataDir);
  let secrets: string[] = saved ? [saved.echoSecret, saved.tenantSigningSecret] : [];
  const echo = new EchoReceiver({
    host: '127.0.0.1',
    port: echoPort,
    secrets: () => secrets,
    print: (line) => void process.stdout.write(line + '\n'),
  });
  const echoUrl = await echo.start();
  let node: BelfryNode;
  try {
    node = await startNode(config);
  } catch (err) {
    await echo.close();
    throw err;
  }
  const stop = stopper(node, echo);
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  try {
    const state = await provision(node, `${echoUrl}/`, saved);
    secrets = [state.echoSecret, state.tenantSigningSecret];
    writeState(config.dataDir, state);
    writeEnvFile(config.dataDir, { url: node.url, state, echoUrl });
    process.stdout.write(banner({ config, node, echoUrl, state }));
  } catch (err) {
    process.stderr.write(`belfry dev: could not make the dev tenant: ${(err as Error).message}\n`);
    await node.stop();
    await echo.close();
    process.exit(1);
  }
}

/** The node's settings with dev's defaults and guards, and the echo receiver's port. */
export function devSettings(argv: string[], env: NodeJS.ProcessEnv): { config: NodeConfig; echoPort: number } {
  const rest: string[] = [];
  let echoText = env.BELFRY_DEV_ECHO_PORT;
  let echoSource = 'environment variable BELFRY_DEV_ECHO_PORT';
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--echo-port' || arg.startsWith('--echo-port=')) {
      echoText = arg === '--echo-port' ? argv[++i] : arg.slice('--echo-port='.length);
      echoSource = 'flag --echo-port';
    } else rest.push(arg);
  }
  let echoPort = ECHO_PORT_DEFAULT;
  if (echoText !== undefined && echoText !== '') {
    echoPort = /^\d{1,5}$/.test(echoText) ? Number(echoText) : NaN;
    if (!(echoPort >= 0 && echoPort <= 65535))
      throw new ConfigError(`${echoSource}: invalid value ${JSON.stringify(echoText ?? '')} for the echo port`);
  }
  // A config file names its own data dir and log level; without one, dev's defaults come under the environment.
  const withFile = rest.some((a) => a === '--config' || a.startsWith('--config=')) || !!env.BELFRY_CONFIG;
  const config = resolveConfig(rest, withFile ? env : { ...DEV_DEFAULTS, ...env });
  if (config.store !== 'sqlite')
    throw new DevRefusal('belfry dev runs on SQLite in its own data dir; --store is for belfry start');
  if (!LOOPBACK_HOST.test(config.host))
    throw new DevRefusal(
      `--host ${config.host}: belfry dev serves on loopback only (its webhooks may reach this machine); belfry start serves others`,
    );
  const allowHosts = [...config.allowHosts, ...LOOPBACK_ALLOWED.filter((h) => !config.allowHosts.includes(h))];
  return { config: { ...config, allowHosts }, echoPort };
}

/**
 * Refuses a data dir that `belfry start` made (dev writes an API key in clear into its own), then
 * makes the dir private and its admin key, so the node does not announce a generated one.
 */
function prepareDevDataDir(config: NodeConfig): void {
  const dir = config.dataDir;
  if (existsSync(join(dir, 'belfry.db')) && !existsSync(join(dir, STATE_FILE)))
    throw new DevRefusal(
      `${dir} holds the data of a node that belfry start made; belfry dev keeps its own data (default ./belfry-dev): pass --data <another dir>`,
    );
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const keyFile = join(dir, 'admin.key');
  if (config.adminKey === null && !existsSync(keyFile)) privateWrite(keyFile, newSecretToken('bk_admin_') + '\n');
}

function readState(dir: string): DevState | null {
  const file = join(dir, STATE_FILE);
  if (!existsSync(file)) return null;
  const state = JSON.parse(readFileSync(file, 'utf8')) as Partial<DevState>;
  const complete = ['tenantId', 'tenantSigningSecret', 'apiKey', 'echoSecret'].every(
    (k) => typeof state[k as keyof DevState] === 'string',
  );
  return complete ? (state as DevState) : null;
}

function writeState(dir: string, state: DevState): void {
  privateWrite(join(dir, STATE_FILE), JSON.stringify(state, null, 2) + '\n');
}

/**
 * `. <data>/dev.env` puts the node's URL and the dev tenant's key in a shell, for curl and the CLI.
 * Not the admin key: `belfry start` reads BELFRY_ADMIN_KEY too, and a node started in that shell
 * would take the dev node's.
 */
function writeEnvFile(dir: string, v: { url: string; state: DevState; echoUrl: string }): void {
  const lines = [
    '# belfry dev: this dev node and its keys, for trying Belfry (not for production). In a shell: . <this file>',
    `export BELFRY_URL='${v.url}'`,
    `export BELFRY_API_KEY='${v.state.apiKey}'`,
    `export BELFRY_ECHO_URL='${v.echoUrl}'`,
  ];
  privateWrite(join(dir, ENV_FILE), lines.join('\n') + '\n');
}

/** Written readable by this user only (the mode given at creation is cut by the umask; chmod is not). */
function privateWrite(file: string, text: string): void {
  writeFileSync(file, text, { mode: 0o600 });
  chmodSync(file, 0o600);
}

/**
 * The dev tenant, its API key and the echo destination: those of the last start when they still
 * work, made anew otherwise. The echo destination is put at every start (its URL may change).
 */
async function provision(node: BelfryNode, echoUrl: string, saved: DevState | null): Promise<DevState> {
  const admin = new ApiClient(node.url, node.adminKey, globalThis.fetch);
  let tenant = saved && (await works(() => admin.call((b) => b.tenants.get(saved.tenantId)))) ? saved : null;
  if (!tenant) {
    const made = await admin.call((b) => b.tenants.create({ name: TENANT_NAME }));
    tenant = { tenantId: made.id, tenantSigningSecret: made.signingSecret, apiKey: '', echoSecret: '' };
  }
  let apiKey = tenant.apiKey;
  const keyWorks =
    apiKey !== '' &&
    (await works(() => new ApiClient(node.url, apiKey, globalThis.fetch).call((b) => b.account.limits())));
  if (!keyWorks) apiKey = (await admin.call((b) => b.tenants.createKey(tenant.tenantId))).key;
  const echoSecret = tenant.echoSecret || newWebhookSecret();
  const client = new ApiClient(node.url, apiKey, globalThis.fetch);
  await client.call((b) => b.destinations.put(ECHO_DESTINATION, { url: echoUrl, secret: echoSecret }));
  return { tenantId: tenant.tenantId, tenantSigningSecret: tenant.tenantSigningSecret, apiKey, echoSecret };
}

/** Whether the call succeeds; false on a 401 or 404 (gone, revoked), any other failure thrown. */
async function works(call: () => Promise<unknown>): Promise<boolean> {
  try {
    await call();
    return true;
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 404)) return false;
    throw err;
  }
}

function banner(v: { config: NodeConfig; node: BelfryNode; echoUrl: string; state: DevState }): string {
  const { node, echoUrl, state } = v;
  const envFile = join(v.config.dataDir, ENV_FILE);
  const body = JSON.stringify({ delay: '5s', destination: ECHO_DESTINATION, payload: { hello: 'belfry' } });
  return `
belfry dev ${belfryVersion()}: for trying Belfry on this machine, not for production (that is belfry start)

  node       ${node.url}   SQLite in ${v.config.dataDir}; webhooks may reach loopback addresses
  dashboard  ${node.url}/ui   sign in with the API key
  echo       ${echoUrl}   the destination "${ECHO_DESTINATION}": checks signatures, prints each delivery below
             recent deliveries: curl -s ${echoUrl}/   one: curl -s '${echoUrl}/deliveries/<id>?wait=30s'
  tenant     ${TENANT_NAME} (${state.tenantId})
  API key    ${state.apiKey}
  admin key  ${node.adminKey}   (also in ${join(v.config.dataDir, 'admin.key')})
  saved in   ${envFile}   (. ${envFile} exports BELFRY_URL, BELFRY_API_KEY, BELFRY_ECHO_URL)

Schedule an event five seconds ahead to the echo receiver (in another terminal):

  curl -s -X POST ${node.url}/v1/events -H 'Authorization: Bearer ${state.apiKey}' \\
       -H 'content-type: application/json' -d '${body}'

Ready: deliveries to the echo receiver print below. Ctrl-C stops.
`;
}

/** SIGTERM or SIGINT: the node stops gracefully (deliveries in flight finish), then the receiver; exit 0. */
function stopper(node: BelfryNode, echo: EchoReceiver): (signal: string) => void {
  let signalled = false;
  return (signal) => {
    if (signalled) return;
    signalled = true;
    node.app.log.info({ signal }, 'signal received');
    node
      .stop()
      .then(() => echo.close())
      .then(
        () => process.exit(0),
        (err) => {
          process.stderr.write(`shutdown failed: ${String(err)}\n`);
          process.exit(1);
        },
      );
  };
}
