/**
 * node-postgres' own helpers (its package exports `pg/lib/*`; @types/pg declares only what the
 * main module exports): the text it sends for a parameter, and SQL literal quoting.
 */
declare module 'pg/lib/utils.js' {
  /** A parameter's text as node-postgres sends it (arrays as array literals, objects as JSON); null for null or undefined. */
  export function prepareValue(value: unknown): string | Buffer | null;
  export function escapeLiteral(text: string): string;
  const utils: { prepareValue: typeof prepareValue; escapeLiteral: typeof escapeLiteral };
  export default utils;
}
