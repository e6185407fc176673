/**
 * The sliced JSON parser of large bodies (src/api/json-slices.ts) never holds the event loop for
 * long, on the costliest JSON there is. A timing assertion: it runs in the slow suite, alone, not
 * beside other test files (beside them on Node 24 a garbage-collector pause held it 283 ms against
 * a bound of 232 ms, half of one JSON.parse of the same text measured just before).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import { parseJsonSliced, pieceParser } from '../../src/api/json-slices.ts';
import { watchLoop } from '../support/loop-watch.ts';

const parsePiece = pieceParser(Fastify().getDefaultJsonParser('error', 'error'));

test('4 MiB of the costliest JSON (empty objects, nested arrays, many keys) never holds the event loop for long', async () => {
  const size = 4 * 1024 * 1024;
  const bodies: [string, string][] = [
    [
      'empty objects',
      `{"events":[${Array(Math.floor(size / 3))
        .fill('{}')
        .join(',')}]}`,
    ],
    [
      'nested arrays',
      `{"events":[${Array(Math.floor(size / 5))
        .fill('[[]]')
        .join(',')}]}`,
    ],
    [
      'one object of many keys',
      `{"events":[{${Array.from({ length: Math.floor(size / 12) }, (_, i) => `"k${i}":1`).join(',')}}]}`,
    ],
  ];
  for (const [name, text] of bodies) {
    const native = performance.now();
    const want = JSON.parse(text);
    const nativeMs = performance.now() - native;
    const watched = await watchLoop(() => parseJsonSliced(text, parsePiece));
    assert.deepEqual(watched.result, want);
    const heldMs = watched.cpuHeldMaxMs;
    console.log(
      `${name}: ${(text.length / 1048576).toFixed(2)} MiB; one JSON.parse ${nativeMs.toFixed(0)} ms; sliced ${watched.ms.toFixed(0)} ms in all, event loop held at most ${heldMs.toFixed(1)} ms of CPU (${watched.delayMaxMs.toFixed(1)} ms of wall-clock time)`,
    );
    // Slices are 4 ms and a piece parses in about 1 ms, but the garbage collector's pauses come on
    // top (10-40 ms here); one JSON.parse took 160-840 ms. So: well under one JSON.parse of the
    // same text measured just before. Counted in the main thread's CPU time between two turns of
    // the loop: on a loaded CI machine the wall-clock gap also counts the time the process was
    // not run at all (a gap of 178 ms there, against 30-45 ms on a quiet machine).
    assert.ok(
      heldMs < Math.max(100, nativeMs / 2),
      `${name}: event loop held ${heldMs.toFixed(1)} ms of CPU (${watched.delayMaxMs.toFixed(1)} ms of wall-clock time; one JSON.parse: ${nativeMs.toFixed(0)} ms)`,
    );
  }
});
