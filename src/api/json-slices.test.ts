import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { JsonBodyError, parseJsonSliced, pieceParser, type SlicedParseOptions } from './json-slices.ts';

const parsePiece = pieceParser(Fastify().getDefaultJsonParser('error', 'error'));
/** Forces the sliced path with tiny pieces, so that every branch is taken on small documents. */
const TINY: SlicedParseOptions = { nativeCharsMax: 0, pieceChars: 8 };

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRINGS = ['', 'a', 'x"y', 'back\\slash', '[{', '}]', 'é', '\u2028', 'tab\t', 'k', 'constructor', 'prototype'];
const WS = ['', ' ', '\n', '\t', '\r\n  '];

/** Random JSON text: random whitespace, duplicate keys, escapes, nesting. */
function randomJson(r: () => number, depth = 0): string {
  const ws = () => WS[Math.floor(r() * WS.length)];
  const pick = r();
  if (depth > 4 || pick < 0.3) {
    const scalars = [
      () => JSON.stringify(STRINGS[Math.floor(r() * STRINGS.length)]),
      () => String(Math.floor(r() * 2000) - 1000),
      () => '1.5e3',
      () => 'true',
      () => 'null',
      () => '"\\u0041\\"\\\\"',
    ];
    return scalars[Math.floor(r() * scalars.length)]();
  }
  const n = Math.floor(r() * 6);
  const parts: string[] = [];
  if (pick < 0.65) {
    for (let i = 0; i < n; i++) parts.push(ws() + randomJson(r, depth + 1) + ws());
    return `[${parts.join(',')}]`;
  }
  for (let i = 0; i < n; i++)
    parts.push(
      `${ws()}${JSON.stringify(STRINGS[Math.floor(r() * 5)] + (r() < 0.7 ? i : ''))}${ws()}:${ws()}${randomJson(r, depth + 1)}${ws()}`,
    );
  return `{${parts.join(',')}}`;
}

async function outcome(text: string, opts: SlicedParseOptions): Promise<{ ok: true; value: unknown } | { ok: false }> {
  try {
    return { ok: true, value: await parseJsonSliced(text, parsePiece, opts) };
  } catch (err) {
    assert.ok(err instanceof JsonBodyError, `refusals are JsonBodyError, got ${String(err)}`);
    return { ok: false };
  }
}

function expected(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: parsePiece(text) };
  } catch {
    return { ok: false };
  }
}

test('the sliced parse gives what one parse gives, for valid and broken documents alike', async () => {
  const seed = Number(process.env.BELFRY_JSON_SEED ?? Date.now() % 1_000_000);
  const r = rng(seed);
  let valid = 0;
  let broken = 0;
  for (let n = 0; n < 3_000; n++) {
    let text = `${WS[n % WS.length]}${randomJson(r)}${WS[(n + 2) % WS.length]}`;
    if (n % 3 === 0 && text.length > 0) {
      // Break it: delete, duplicate or insert one character.
      const at = Math.floor(r() * text.length);
      const c = ',:[]{}"\\ 1x'[Math.floor(r() * 12)];
      text = n % 2 === 0 ? text.slice(0, at) + text.slice(at + 1) : text.slice(0, at) + c + text.slice(at);
    }
    const want = expected(text);
    const got = await outcome(text, TINY);
    assert.equal(got.ok, want.ok, `seed ${seed}, document ${n}: ${JSON.stringify(text)}`);
    if (want.ok && got.ok) {
      assert.deepEqual(got.value, want.value, `seed ${seed}, document ${n}: ${JSON.stringify(text)}`);
      assert.deepEqual(Object.keys(got.value ?? {}), Object.keys(want.value ?? {}), 'same key order');
      valid++;
    } else broken++;
  }
  assert.ok(valid > 1_000 && broken > 300, `both kinds were tried (${valid} valid, ${broken} broken)`);
});

test('refuses what Fastify refuses: __proto__ keys and constructor.prototype, at any size', async () => {
  const filler = `"f":"${'x'.repeat(40)}"`;
  for (const text of [
    `{${filler},"__proto__":{"a":1}}`,
    `{${filler},"__proto__":{${filler}}}`,
    `{${filler},"\\u005f_proto__":[${filler.replace(/"f":/, '')}]}`,
    `{${filler},"constructor":{"prototype":{"a":1}}}`,
    `{${filler},"constructor":{${filler},"prototype":{${filler}}}}`,
    `[{${filler}},{"x":{"constructor":{"prototype":1}}}]`,
  ]) {
    assert.equal(expected(text).ok, false, `Fastify refuses ${text}`);
    assert.equal((await outcome(text, TINY)).ok, false, `the sliced parse refuses ${text}`);
  }
  const fine = `{${filler},"constructor":{${filler}},"proto":1}`;
  assert.deepEqual(await parseJsonSliced(fine, parsePiece, TINY), JSON.parse(fine));
});

test('a byte order mark and a top-level scalar are read as Fastify reads them', async () => {
  for (const text of ['\ufeff{"a":[1,2,3,4,5,6,7,8,9]}', `"${'s'.repeat(100)}"`, ' 12345678901234 ', '\ufeff[]']) {
    assert.deepEqual(
      await parseJsonSliced(text, parsePiece, TINY),
      expected(text).ok ? (expected(text) as { value: unknown }).value : Symbol('refused'),
    );
  }
});

test('nesting deeper than depthMax is refused without building anything', async () => {
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
  await assert.rejects(
    parseJsonSliced(deep(2_000), parsePiece, { ...TINY, depthMax: 1_000 }),
    /nesting deeper than 1000/,
  );
  assert.deepEqual(await parseJsonSliced(deep(900), parsePiece, { ...TINY, depthMax: 1_000 }), JSON.parse(deep(900)));
});

test('topArrayMax stops at the first member past the bound, before parsing it', async () => {
  const text = `{"events":[${Array.from({ length: 50 }, (_, i) => `{"i":${i}}`).join(',')}]}`;
  const over = () => new Error('too many');
  await assert.rejects(
    parseJsonSliced(text, parsePiece, { ...TINY, topArrayMax: { key: 'events', max: 10, over } }),
    /too many/,
  );
  const ok = (await parseJsonSliced(text, parsePiece, { ...TINY, topArrayMax: { key: 'events', max: 50, over } })) as {
    events: unknown[];
  };
  assert.equal(ok.events.length, 50);
  // Only the top-level key is bounded.
  const nested = `{"x":{"events":[${'1,'.repeat(40)}1]}}`;
  assert.deepEqual(
    await parseJsonSliced(nested, parsePiece, { ...TINY, topArrayMax: { key: 'events', max: 10, over } }),
    JSON.parse(nested),
  );
});
