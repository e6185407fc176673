import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createPrivateFile, makePrivateDir, tightenDataDir } from './data-dir.ts';

const modeOf = (path: string) => statSync(path).mode & 0o7777;

/** Runs `fn` with the process umask set to `umask`. */
function withUmask<T>(umask: number, fn: () => T): T {
  const previous = process.umask(umask);
  try {
    return fn();
  } finally {
    process.umask(previous);
  }
}

describe('data dir modes', () => {
  const root = mkdtempSync(join(tmpdir(), 'belfry-data-dir-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('creates the dir 0700 and files 0600 exactly, whatever the umask (000, or an odd 0o277)', () => {
    for (const [name, umask] of [
      ['open', 0o000],
      ['odd', 0o277],
    ] as const) {
      const dir = join(root, name, 'data');
      withUmask(umask, () => {
        makePrivateDir(dir);
        createPrivateFile(join(dir, 'f'));
      });
      assert.equal(modeOf(dir), 0o700, `${name}: dir`);
      assert.equal(modeOf(join(dir, 'f')), 0o600, `${name}: file`);
    }
  });

  it("leaves an existing file as it is (content and mode): tightening is tightenDataDir's, logged", () => {
    const file = join(root, 'existing');
    writeFileSync(file, 'kept');
    chmodSync(file, 0o644);
    createPrivateFile(file);
    assert.equal(readFileSync(file, 'utf8'), 'kept');
    assert.equal(modeOf(file), 0o644);
  });

  it('takes group and other bits off the dir and each entry in it, says what it changed, and leaves symlinks alone', () => {
    const dir = join(root, 'loose');
    mkdirSync(dir);
    chmodSync(dir, 0o1777);
    writeFileSync(join(dir, 'db'), '');
    chmodSync(join(dir, 'db'), 0o644);
    writeFileSync(join(dir, 'owner-only'), '');
    chmodSync(join(dir, 'owner-only'), 0o400);
    mkdirSync(join(dir, 'sub'));
    chmodSync(join(dir, 'sub'), 0o755);
    const outside = join(root, 'outside');
    writeFileSync(outside, '');
    chmodSync(outside, 0o644);
    symlinkSync(outside, join(dir, 'link'));

    const { tightened, failed } = tightenDataDir(dir);
    assert.deepEqual(failed, []);
    assert.deepEqual(
      tightened.sort((a, b) => a.path.localeCompare(b.path)),
      [
        { path: dir, from: '01777', to: '0700' },
        { path: join(dir, 'db'), from: '0644', to: '0600' },
        { path: join(dir, 'sub'), from: '0755', to: '0700' },
      ],
    );
    assert.equal(modeOf(join(dir, 'owner-only')), 0o400, 'already private: unchanged');
    assert.equal(modeOf(outside), 0o644, "a symlink's target is not the data dir's");
    assert.deepEqual(tightenDataDir(dir).tightened, [], 'nothing left to change');
    assert.deepEqual(tightenDataDir(join(root, 'absent')), { tightened: [], failed: [] });
  });
});
