/**
 * What a node opens before anything runs: its data dir (private), its admin key, the watch on
 * the data dir's disk, and the store (SQLite on a thread of its own, or PostgreSQL), migrated and
 * checked against the shard count it was made with.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { newSecretToken } from '../core/ids.ts';
import { openPostgresStore } from '../store/postgres/postgres-store.ts';
import { makePrivateDir, PRIVATE_FILE_MODE, tightenDataDir } from '../store/sqlite/data-dir.ts';
import { QUICK_CHECK_MS_MAX } from '../store/sqlite/integrity-check.ts';
import { openSqliteThreadStore } from '../store/sqlite/thread-store.ts';
import type { Store } from '../store/store.ts';
import { ConfigError, type NodeConfig } from './config.ts';
import { StorageWatch } from './storage-watch.ts';

/**
 * The data dir (when this node uses one: SQLite, or to keep a generated admin key) is made 0700
 * with every file in it 0600: created so, and an existing one tightened, saying so in the log.
 */
export function prepareDataDir(config: NodeConfig, logger: Logger): void {
  if (config.store !== 'sqlite' && config.adminKey) return;
  makePrivateDir(config.dataDir);
  const { tightened, failed } = tightenDataDir(config.dataDir);
  for (const t of tightened)
    logger.warn(t, 'tightened the mode of a data-dir entry (it holds secrets: the dir is 0700, its files 0600)');
  for (const f of failed)
    logger.warn(f, 'could not tighten the mode of a data-dir entry; make it readable by this user only');
}

/**
 * The admin key: from config, else the one saved in the data dir, else a new one, saved there
 * (mode 0600) and printed once to stderr.
 */
export function resolveAdminKey(config: NodeConfig, logger: Logger): string {
  if (config.adminKey) return config.adminKey;
  const file = join(config.dataDir, 'admin.key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const key = newSecretToken('bk_admin_');
  writeFileSync(file, key + '\n', { mode: PRIVATE_FILE_MODE, flag: 'wx' });
  // The mode given at creation is cut by the umask; this one is not.
  chmodSync(file, PRIVATE_FILE_MODE);
  process.stderr.write(
    `\nBelfry generated an admin key (shown once; it is saved in ${file}):\n\n  ${key}\n\n` +
      `Create a tenant:  curl -s -X POST -H "Authorization: Bearer ${key}" -H 'content-type: application/json' \\\n` +
      `                    -d '{"name":"my-team"}' http://${config.host}:${config.port}/v1/tenants\n\n`,
  );
  logger.info({ file }, 'generated an admin key');
  return key;
}

/** On SQLite: the watch on the data dir's disk (a full disk, a damaged file), logging its changes. Null otherwise. */
export function storageWatchOf(config: NodeConfig, logger: Logger): StorageWatch | null {
  if (config.store !== 'sqlite') return null;
  return new StorageWatch({
    dataDir: config.dataDir,
    onChange: (full, { freeBytes }) => {
      if (full)
        logger.error(
          { dataDir: config.dataDir },
          'the disk is full: writes are refused (503 storage_full) and /readyz says storage_full until there is room',
        );
      else logger.info({ dataDir: config.dataDir, freeBytes }, 'the disk has room again: ready');
    },
  });
}

/**
 * `sqlite`, or a `postgres://` URL; a `schema` query parameter picks the PostgreSQL schema
 * (default `belfry`), so several clusters or test runs can share one database.
 */
export async function openStore(config: NodeConfig, logger: Logger, storage: StorageWatch | null): Promise<Store> {
  if (config.store === 'sqlite') {
    const store = await openSqliteThreadStore({ dataDir: config.dataDir, integrityCheckMsMax: QUICK_CHECK_MS_MAX });
    if (storage) store.onCallError = (err) => storage.observe(err);
    const check = store.integrity;
    const file = { file: store.filePath, bytes: check?.bytes, ms: check?.ms };
    if (check?.status === 'ok') logger.info(file, 'database file checked (PRAGMA quick_check: ok)');
    else if (check?.status === 'timed_out') {
      logger.warn(
        file,
        `the database file's quick_check did not finish within ${QUICK_CHECK_MS_MAX} ms; started without it (SQLite still refuses a damaged page when it reads one)`,
      );
    } else if (check?.status === 'not_run')
      logger.warn({ ...file, error: check.error }, "the database file's quick_check could not run; started without it");
    return store;
  }
  const url = new URL(config.store);
  const schema = url.searchParams.get('schema') ?? undefined;
  // ?citus=true: a new schema is distributed on Citus (docs/citus.md); one distributed before is used as such.
  const citus = url.searchParams.get('citus');
  if (citus !== null && citus !== 'true' && citus !== 'false')
    throw new ConfigError(`--store: citus=${citus} in the PostgreSQL URL must be true or false`);
  url.searchParams.delete('schema');
  url.searchParams.delete('citus');
  return openPostgresStore({
    url: url.toString(),
    schema,
    citus: citus === 'true',
    onPoolError: (err) => logger.warn({ err: err.message }, 'a pooled PostgreSQL connection failed'),
  });
}

/**
 * Migrates the store and checks the shard count it was made with. Events are placed in shards by
 * hash mod the shard count: another count on the same store would leave the events of shards
 * past it unfired, or fire shards no node owns.
 */
export async function prepareStore(store: Store, config: NodeConfig): Promise<void> {
  await store.migrate();
  const storedShards = await store.shardCountRecord({ shardCount: config.shardCount });
  if (storedShards === config.shardCount) await store.warmUp?.(storedShards);
  if (storedShards !== config.shardCount) {
    throw new ConfigError(
      `--shard-count ${config.shardCount}: this store's events are placed in ${storedShards} shards, fixed when the store was made; start with --shard-count ${storedShards} (or BELFRY_SHARD_COUNT=${storedShards})`,
    );
  }
}
