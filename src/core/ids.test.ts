import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { canonicalJson, sha256Hex } from './ids.ts';

describe('sha256Hex', () => {
  it('is the hex SHA-256 of the UTF-8 text (stored request hashes must not change)', () => {
    for (const text of ['', 'abc', 'é😀\ud800', '{"destination":"rx","id":"b1"}', 'x'.repeat(10_000)]) {
      assert.equal(sha256Hex(text), createHash('sha256').update(text).digest('hex'));
    }
    assert.equal(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

/** The definition canonicalJson must keep matching: stored request hashes were made with it. */
function canonicalReference(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return '[' + value.map(canonicalReference).join(',') + ']';
  const keys = Object.keys(value as object).sort();
  return (
    '{' +
    keys.map((k) => JSON.stringify(k) + ':' + canonicalReference((value as Record<string, unknown>)[k])).join(',') +
    '}'
  );
}

describe('canonicalJson', () => {
  it('sorts keys at every level and writes JSON values as JSON.stringify does', () => {
    assert.equal(
      canonicalJson({
        payload: { b: [1, { z: null, a: -0 }], a: 'é"\n' },
        id: 'x',
        fireAt: 1e21,
        delay: undefined,
        '10': true,
        '9': NaN,
      }),
      '{"10":true,"9":null,"delay":null,"fireAt":1e+21,"id":"x","payload":{"a":"é\\"\\n","b":[1,{"a":0,"z":null}]}}',
    );
  });

  it('matches the reference definition on random values, holes, long objects and odd keys', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const leaves = [null, true, false, 1.5, -0, 1e21, 'x"\\é\u2028\ud800', '', 42, undefined, NaN, Infinity, 2 ** 64];
    const keys = ['b', 'a', '10', '2', 'é', 'A', '__x', 'zz', '\ud800', '', 'constructor'];
    const value = (depth: number): unknown => {
      const r = random();
      if (depth > 4 || r < 0.3) return leaves[Math.floor(random() * leaves.length)];
      if (r < 0.6) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
      const o: Record<string, unknown> = {};
      const n = random() < 0.1 ? 30 : Math.floor(random() * 6);
      for (let i = 0; i < n; i++)
        o[keys[Math.floor(random() * keys.length)] + (random() < 0.5 ? '' : i)] = value(depth + 1);
      return o;
    };
    for (let i = 0; i < 20_000; i++) {
      const v = value(0);
      assert.equal(canonicalJson(v), canonicalReference(v));
    }
    // biome-ignore lint/suspicious/noSparseArray: a hole is the case under test
    const holes = [1, , 3];
    assert.equal(canonicalJson(holes), canonicalReference(holes));
  });
});
