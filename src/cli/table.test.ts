import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cell, msCell, renderFields, renderTable, sanitize, timeCell } from './table.ts';

test('renderTable aligns columns with two spaces and no trailing spaces', () => {
  const out = renderTable(
    ['ID', 'STATE', 'N'],
    [
      ['a', 'scheduled', '1'],
      ['long-id', 'canceled', ''],
    ],
  );
  assert.equal(out, ['ID       STATE      N', 'a        scheduled  1', 'long-id  canceled'].join('\n'));
});

test('renderTable fills missing cells with "-"', () => {
  assert.equal(renderTable(['A', 'B'], [['x']]), 'A  B\nx  -');
});

test('renderTable with no rows prints the header only', () => {
  assert.equal(renderTable(['A', 'BB'], []), 'A  BB');
});

test('renderTable cuts cells wider than the bound with an ellipsis', () => {
  const out = renderTable(['E'], [['abcdefghij']], { cellWidthMax: 5 });
  assert.equal(out, 'E\nabcd…');
});

test('renderTable keeps every row on one line', () => {
  const out = renderTable(['E', 'F'], [['line1\nline2\tx', 'y']]);
  assert.equal(out, 'E              F\nline1 line2 x  y');
});

test('renderTable counts a character outside the BMP once, not as two UTF-16 units', () => {
  const out = renderTable(
    ['A', 'B'],
    [
      ['𝐀', 'x'],
      ['ab', 'y'],
    ],
  );
  assert.equal(out, 'A   B\n𝐀   x\nab  y');
});

test('renderFields aligns values after the longest label', () => {
  assert.equal(
    renderFields([
      ['id', 'e1'],
      ['last error', 'boom'],
      ['group', '-'],
    ]),
    'id          e1\nlast error  boom\ngroup       -',
  );
});

test('sanitize replaces control characters', () => {
  assert.equal(sanitize('a\r\nb\u0007c'), 'a b?c');
});

test('cell shows absent values as "-" and objects as compact JSON', () => {
  const cases: Array<[unknown, string]> = [
    [null, '-'],
    [undefined, '-'],
    ['', '-'],
    ['x', 'x'],
    [0, '0'],
    [false, 'false'],
    [{ a: 1 }, '{"a":1}'],
    [[1, 2], '[1,2]'],
  ];
  for (const [value, expected] of cases) assert.equal(cell(value), expected, JSON.stringify(value));
});

test('timeCell shows epoch ms as RFC 3339 and strings as given', () => {
  assert.equal(timeCell(Date.UTC(2026, 10, 22, 10, 21, 55)), '2026-11-22T10:21:55.000Z');
  assert.equal(timeCell('2026-11-22T10:21:55Z'), '2026-11-22T10:21:55Z');
  assert.equal(timeCell(null), '-');
});

test('msCell appends the unit', () => {
  assert.equal(msCell(12), '12ms');
  assert.equal(msCell(null), '-');
});
