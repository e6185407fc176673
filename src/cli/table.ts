/** Plain-text rendering for the CLI: aligned tables, label/value blocks, and display cells. */

/** Widest cell a table prints; longer text is cut with an ellipsis so one long error cannot wrap every row. */
export const CELL_WIDTH_MAX = 60;

const GAP = '  ';
const ELLIPSIS = '…';
const EMPTY = '-';

export interface TableOptions {
  /** Cells wider than this many characters are cut. Defaults to CELL_WIDTH_MAX. */
  cellWidthMax?: number;
}

/** Width in code points, so that a multi-unit character counts once. */
function widthOf(text: string): number {
  return [...text].length;
}

/** Replaces line breaks and tabs with spaces and other control characters with '?', so a cell stays on one line. */
export function sanitize(text: string): string {
  return text.replace(/[\r\n\t]+/g, ' ').replace(/[\u0000-\u001f\u007f]/g, '?');
}

function truncate(text: string, widthMax: number): string {
  const chars = [...text];
  if (chars.length <= widthMax) return text;
  return chars.slice(0, Math.max(0, widthMax - 1)).join('') + ELLIPSIS;
}

/**
 * Renders rows under a header line, columns left-aligned and separated by two spaces.
 * Missing cells print as '-'; no line carries trailing spaces.
 */
export function renderTable(headers: string[], rows: string[][], options: TableOptions = {}): string {
  const widthMax = options.cellWidthMax ?? CELL_WIDTH_MAX;
  const lines = [headers, ...rows].map((row) => headers.map((_, i) => truncate(sanitize(row[i] ?? EMPTY), widthMax)));
  const widths = headers.map((_, i) => Math.max(...lines.map((line) => widthOf(line[i]))));
  return lines
    .map((line) =>
      line
        .map((text, i) => text + ' '.repeat(widths[i] - widthOf(text)))
        .join(GAP)
        .trimEnd(),
    )
    .join('\n');
}

/** Renders `label  value` lines with the values aligned; values are never cut (this is the detail view). */
export function renderFields(fields: Array<[label: string, value: string]>): string {
  const labelWidth = Math.max(0, ...fields.map(([label]) => widthOf(label)));
  return fields
    .map(([label, value]) => `${label}${' '.repeat(labelWidth - widthOf(label))}${GAP}${sanitize(value)}`.trimEnd())
    .join('\n');
}

/** Display text of any JSON value: '-' for null, undefined or '', compact JSON for objects. */
export function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return EMPTY;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** Display text of a time the API returned either as RFC 3339 or as epoch milliseconds. */
export function timeCell(value: unknown): string {
  if (typeof value === 'number' && Number.isFinite(value)) return new Date(value).toISOString();
  return cell(value);
}

/** Display text of a millisecond count: '12ms', or '-' when absent. */
export function msCell(value: unknown): string {
  return typeof value === 'number' ? `${value}ms` : cell(value);
}
