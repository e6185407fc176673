import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_TENANT_LIMITS } from '../core/tenant-limits.ts';
import { RETENTION_DEFAULTS } from '../core/retention.ts';
import { ConfigError, DEFAULT_CONFIG, resolveConfig } from './config.ts';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function configFile(content: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'belfry-config-'));
  dirs.push(dir);
  const path = join(dir, 'belfry.json');
  writeFileSync(path, JSON.stringify(content));
  return path;
}

describe('resolveConfig', () => {
  it('has the contract defaults', () => {
    const c = resolveConfig([], {});
    assert.equal(c.port, 7070);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.dataDir, './belfry-data');
    assert.equal(c.store, 'sqlite');
    assert.equal(c.adminKey, null);
    assert.deepEqual(c.allowHosts, []);
    assert.deepEqual(c, DEFAULT_CONFIG);
  });

  it('reads every contract setting from flags, env and file, flags over env over file', () => {
    const file = configFile({
      port: 1111,
      host: '0.0.0.0',
      dataDir: '/f',
      store: 'sqlite',
      adminKey: 'file-key-0123456789',
      allowHosts: ['10.0.0.1'],
    });
    const env = { BELFRY_PORT: '2222', BELFRY_DATA_DIR: '/e', BELFRY_ALLOW_HOSTS: '127.0.0.1, ::1' };
    const c = resolveConfig(['--config', file, '--port', '3333'], env);
    assert.equal(c.port, 3333);
    assert.equal(c.dataDir, '/e');
    assert.equal(c.host, '0.0.0.0');
    assert.equal(c.adminKey, 'file-key-0123456789');
    assert.deepEqual(c.allowHosts, ['127.0.0.1', '::1']);
    const all = resolveConfig(
      [
        '--port',
        '0',
        '--host',
        '::1',
        '--data',
        '/d',
        '--store',
        'postgres://u@h/db',
        '--admin-key',
        'flag-key-0123456789',
        '--allow-hosts',
        '127.0.0.0/8',
        '--lookahead',
        '5s',
      ],
      {},
    );
    assert.deepEqual(
      {
        port: all.port,
        host: all.host,
        dataDir: all.dataDir,
        store: all.store,
        adminKey: all.adminKey,
        allowHosts: all.allowHosts,
        lookaheadMs: all.lookaheadMs,
      },
      {
        port: 0,
        host: '::1',
        dataDir: '/d',
        store: 'postgres://u@h/db',
        adminKey: 'flag-key-0123456789',
        allowHosts: ['127.0.0.0/8'],
        lookaheadMs: 5000,
      },
    );
    assert.equal(resolveConfig([], { BELFRY_CONFIG: file }).port, 1111);
  });

  for (const [name, argv, env] of [
    ['a port out of range', ['--port', '70000'], {}],
    ['a port that is not a number', [], { BELFRY_PORT: 'abc' }],
    ['an unknown store', ['--store', 'mysql://x'], {}],
    ['an unknown flag', ['--prot', '1'], {}],
    ['a short admin key', ['--admin-key', 'short'], {}],
    ['a bad duration', ['--lookahead', 'soon'], {}],
    ['an invalid allow-hosts range', ['--allow-hosts', '127.0.0.1,10.0.0.0/40'], {}],
  ] as const) {
    it(`rejects ${name} with a message naming it`, () => {
      assert.throws(() => resolveConfig([...argv], env), ConfigError);
    });
  }

  it('takes the default of every per-tenant limit from flags, env and file, in that order', () => {
    assert.deepEqual(resolveConfig([], {}).limits, DEFAULT_TENANT_LIMITS);
    const file = configFile({ payloadBytesMax: 1000, scheduleAheadMax: '30d', destinationsMax: 7 });
    const c = resolveConfig(['--config', file, '--payload-bytes-max', '2048', '--schedule-requests-per-second', '50'], {
      BELFRY_PAYLOAD_BYTES_MAX: '999',
      BELFRY_PENDING_EVENTS_MAX: '12345',
      BELFRY_SCHEDULE_AHEAD_MAX: '90d',
    });
    assert.equal(c.limits.payloadBytesMax, 2048);
    assert.equal(c.limits.scheduleRequestsPerSecond, 50);
    assert.equal(c.limits.pendingEventsMax, 12345);
    assert.equal(c.limits.scheduleAheadMsMax, 90 * 86_400_000);
    assert.equal(c.limits.destinationsMax, 7);
    assert.equal(c.limits.batchEventsMax, DEFAULT_TENANT_LIMITS.batchEventsMax);
    assert.throws(() => resolveConfig(['--batch-events-max', '0'], {}), /batchEventsMax: must be from 1 to 10000/);
    assert.throws(() => resolveConfig(['--id-length-max', '500'], {}), /idLengthMax/);
    assert.throws(() => resolveConfig([], { BELFRY_SCHEDULE_AHEAD_MAX: 'forever' }), /BELFRY_SCHEDULE_AHEAD_MAX/);
  });

  it('takes the default retention periods and the cleaner bounds from flags, env and file, in that order', () => {
    const d = resolveConfig([], {});
    assert.deepEqual(d.retention, RETENTION_DEFAULTS);
    assert.deepEqual([d.retentionIntervalMs, d.retentionBatchSize, d.retentionDeletesPerSecond], [60_000, 200, 2_000]);
    const file = configFile({
      retentionSucceeded: '1d',
      retentionArchived: 90 * 86_400_000,
      retentionInterval: '5m',
      retentionBatchSize: 200,
    });
    const c = resolveConfig(
      ['--config', file, '--retention-succeeded', '12h', '--retention-deletes-per-second', '800'],
      {
        BELFRY_RETENTION_SUCCEEDED: '2d',
        BELFRY_RETENTION_CANCELED: '30s',
        BELFRY_RETENTION_BATCH_SIZE: '300',
      },
    );
    assert.deepEqual(c.retention, {
      succeeded: 12 * 3_600_000,
      canceled: 30_000,
      discarded: RETENTION_DEFAULTS.discarded,
      archived: 90 * 86_400_000,
    });
    assert.deepEqual([c.retentionIntervalMs, c.retentionBatchSize, c.retentionDeletesPerSecond], [300_000, 300, 800]);
    assert.throws(
      () => resolveConfig(['--retention-discarded', '0s'], {}),
      /flag --retention-discarded: .*retention\.discarded: must be a duration from 1s/,
    );
    assert.throws(() => resolveConfig([], { BELFRY_RETENTION_ARCHIVED: 'forever' }), /BELFRY_RETENTION_ARCHIVED/);
    assert.throws(() => resolveConfig(['--retention-batch-size', '0'], {}), /retentionBatchSize/);
    assert.throws(() => resolveConfig(['--retention-batch-size', '10001'], {}), /retentionBatchSize/);
    assert.throws(() => resolveConfig(['--retention-deletes-per-second', '0'], {}), /retentionDeletesPerSecond/);
    assert.throws(() => resolveConfig(['--retention-interval', '500ms'], {}), /retentionIntervalMs/);
  });

  it('rejects unknown keys in the file', () => {
    assert.throws(() => resolveConfig(['--config', configFile({ prot: 1 })], {}), /unknown setting "prot"/);
  });

  it('turns the access log on by --access-log, BELFRY_ACCESS_LOG or the file key accessLog; off by default', () => {
    assert.equal(resolveConfig([], {}).accessLog, false);
    assert.equal(resolveConfig(['--access-log'], {}).accessLog, true);
    for (const on of ['1', 'true', 'TRUE', 'yes', 'on'])
      assert.equal(resolveConfig([], { BELFRY_ACCESS_LOG: on }).accessLog, true, on);
    for (const off of ['0', 'false', 'no', 'off'])
      assert.equal(resolveConfig([], { BELFRY_ACCESS_LOG: off }).accessLog, false, off);
    assert.equal(resolveConfig(['--config', configFile({ accessLog: true })], {}).accessLog, true);
    // The environment overrides the file; the flag overrides both.
    assert.equal(
      resolveConfig(['--config', configFile({ accessLog: true })], { BELFRY_ACCESS_LOG: '0' }).accessLog,
      false,
    );
    assert.equal(resolveConfig(['--access-log'], { BELFRY_ACCESS_LOG: '0' }).accessLog, true);
  });

  it('refuses an access log setting that is not on or off, naming where it came from', () => {
    assert.throws(
      () => resolveConfig([], { BELFRY_ACCESS_LOG: 'maybe' }),
      (err: unknown) =>
        err instanceof ConfigError &&
        /environment variable BELFRY_ACCESS_LOG/.test(err.message) &&
        /"maybe"/.test(err.message) &&
        /accessLog/.test(err.message),
    );
    assert.throws(
      () => resolveConfig(['--config', configFile({ accessLog: 'sometimes' })], {}),
      /key "accessLog": invalid value "sometimes"/,
    );
    // A flag without a value: a value after it is an unexpected argument.
    assert.throws(() => resolveConfig(['--access-log=yes'], {}), ConfigError);
  });
});
