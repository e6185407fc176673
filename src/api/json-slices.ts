/**
 * JSON.parse in slices, so that no request body within its limit holds the event loop (and with
 * it every timer) for long.
 *
 * Why: JSON.parse is one uninterrupted call, and its cost is per value, not per byte. Measured
 * on the 2-core test machine (shared, loaded): 4.25 MiB of `{}` items took 300 ms, 4.3 MiB of
 * nested arrays 350 ms, 4.3 MiB of events with small-object payloads 75 ms; 4 MiB of string
 * payloads 4 ms.
 *
 * How: a text up to NATIVE_PARSE_CHARS_MAX is parsed at once: 256 KiB of the costliest JSON took
 * 5-11 ms there, and a batch of 1,000 typical events (about 100 KiB) keeps the native speed. A
 * longer one takes two passes, each checking the clock and waiting for setImmediate once it has
 * run SLICE_MS:
 * 1. a scan finds the end of every object or array longer than PIECE_CHARS ("large"), checks
 *    that brackets pair and that nesting stays within depthMax;
 * 2. a build makes each large container member by member: consecutive small members are grouped
 *    in runs of at most PIECE_CHARS characters and each run is parsed by the same secure parser
 *    Fastify uses (wrapped in [] or {}), a large member is built the same way, recursively.
 * So the longest uninterrupted piece of work is one run, PIECE_CHARS of JSON (about 1 ms); what
 * remains is the garbage collector's (a body of a million small values makes young-generation
 * collections of 10-40 ms). The sliced path costs about twice one JSON.parse in all.
 *
 * The result is the value JSON.parse would give (same order of keys, the last of duplicate keys
 * wins), and what Fastify's parser refuses is refused: `__proto__` keys, and `constructor` keys
 * whose value has a `prototype`.
 */
import { LoopSlice, SLICE_MS } from './loop-slice.ts';

/** Texts up to this many characters are parsed in one call. */
export const NATIVE_PARSE_CHARS_MAX = 256 * 1024;
/** Largest piece of text handed to the native parser by the sliced path. */
export const PIECE_CHARS = 16 * 1024;
/** Nesting the sliced path accepts; far above any body the API accepts (payloads nest at most 100). */
export const JSON_DEPTH_MAX = 1_000;

/** The native parser of one piece (Fastify's secure JSON parser); throws on anything it refuses. */
export type PieceParser = (text: string) => unknown;

/** A body that is not acceptable JSON (syntax, nesting, a forbidden prototype key). */
export class JsonBodyError extends SyntaxError {
  override name = 'JsonBodyError';
}

export interface SlicedParseOptions {
  /** Bound on the members of the top-level object's array at `key`, checked as the array is read, before its items are parsed. */
  topArrayMax?: { key: string; max: number; over(): Error };
  /** For tests: smaller pieces and slices. */
  nativeCharsMax?: number;
  pieceChars?: number;
  sliceMs?: number;
  depthMax?: number;
}

const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const COLON = 58;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;

function isWs(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

function bad(message = 'not valid JSON'): JsonBodyError {
  return new JsonBodyError(message);
}

/** The index after the string that opens at `i` (a quote), or -1 when it is not closed. */
function stringEnd(text: string, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = text.indexOf('"', from);
    if (q < 0) return -1;
    let b = q - 1;
    while (text.charCodeAt(b) === BACKSLASH) b--;
    // An even number of backslashes before the quote: it is not escaped.
    if ((q - 1 - b) % 2 === 0) return q + 1;
    from = q + 1;
  }
}

/** JSON.parse of `text` by `parsePiece`, in slices when it is long (see the file comment). */
export async function parseJsonSliced(
  text: string,
  parsePiece: PieceParser,
  opts: SlicedParseOptions = {},
): Promise<unknown> {
  if (text.length <= (opts.nativeCharsMax ?? NATIVE_PARSE_CHARS_MAX)) return parseOrRefuse(parsePiece, text);
  return new SlicedParser(text, parsePiece, opts).parse();
}

function parseOrRefuse(parsePiece: PieceParser, text: string): unknown {
  try {
    return parsePiece(text);
  } catch {
    throw bad();
  }
}

class SlicedParser {
  private readonly pieceChars: number;
  private readonly depthMax: number;
  /** Open index → close index of every container longer than pieceChars. */
  private readonly large = new Map<number, number>();
  private readonly slice: LoopSlice;
  /** Where the top-level container opens (topArrayMax applies to its members). */
  private top = -1;

  constructor(
    private readonly text: string,
    private readonly parsePiece: PieceParser,
    private readonly opts: SlicedParseOptions,
  ) {
    this.pieceChars = opts.pieceChars ?? PIECE_CHARS;
    this.slice = new LoopSlice(opts.sliceMs ?? SLICE_MS);
    this.depthMax = opts.depthMax ?? JSON_DEPTH_MAX;
  }

  async parse(): Promise<unknown> {
    const { text } = this;
    // Fastify's parser (secure-json-parse) accepts a leading byte order mark.
    let start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
    start = this.skipWs(start);
    const c = text.charCodeAt(start);
    // A string, number or literal: one call whatever its length (no values inside it).
    if (c !== OPEN_BRACE && c !== OPEN_BRACKET) return this.secureParse(text);
    const end = await this.scan(start);
    if (this.skipWs(end + 1) !== text.length) throw bad();
    if (!this.large.has(start)) return this.secureParse(text.slice(start, end + 1));
    this.top = start;
    return this.build(start);
  }

  private secureParse(text: string): unknown {
    return parseOrRefuse(this.parsePiece, text);
  }

  private async yieldIfDue(): Promise<void> {
    if (this.slice.due()) await this.slice.turn();
  }

  private skipWs(i: number): number {
    while (i < this.text.length && isWs(this.text.charCodeAt(i))) i++;
    return i;
  }

  /** Pass 1, from the container opening at `start`: records large containers; returns the index of its close. */
  private async scan(start: number): Promise<number> {
    const { text, large, pieceChars, depthMax } = this;
    const opens: number[] = [];
    let i = start;
    let steps = 0;
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        i = stringEnd(text, i);
        if (i < 0) throw bad('a string is not closed');
        continue;
      }
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (opens.length >= depthMax) throw bad(`nesting deeper than ${depthMax} levels`);
        opens.push(i);
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        const open = opens.pop();
        // '{' + 2 = '}', '[' + 2 = ']'
        if (open === undefined || text.charCodeAt(open) + 2 !== c) throw bad();
        if (i - open > pieceChars) large.set(open, i);
        if (opens.length === 0) return i;
      }
      i++;
      if (++steps === 16_384) {
        steps = 0;
        await this.yieldIfDue();
      }
    }
    throw bad('the body ends inside an object or array');
  }

  /** The index after the small value that starts at `i` (its extent was checked by the scan). */
  private valueEnd(i: number): number {
    const { text } = this;
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (end < 0) throw bad();
      return end;
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      const known = this.large.get(i);
      if (known !== undefined) return known + 1;
      let depth = 0;
      for (let j = i; j < text.length; ) {
        const d = text.charCodeAt(j);
        if (d === QUOTE) {
          j = stringEnd(text, j);
          if (j < 0) throw bad();
          continue;
        }
        if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
        else if ((d === CLOSE_BRACE || d === CLOSE_BRACKET) && --depth === 0) return j + 1;
        j++;
      }
      throw bad();
    }
    // A number or literal: up to the next delimiter; the native parser judges it.
    let j = i;
    for (; j < text.length; j++) {
      const d = text.charCodeAt(j);
      if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET || isWs(d)) break;
    }
    if (j === i) throw bad();
    return j;
  }

  /**
   * Pass 2: the large container opening at `open`, member by member. `membersMax`: refused (its
   * `over()`) at the first member past `max`, before that member is parsed.
   */
  private async build(open: number, membersMax?: { max: number; over(): Error }): Promise<unknown> {
    const { text, large } = this;
    const close = large.get(open)!;
    const isArray = text.charCodeAt(open) === OPEN_BRACKET;
    const isTop = open === this.top;
    const array: unknown[] = [];
    const object: Record<string, unknown> = {};
    let runStart = -1;
    let runEnd = -1;
    const flush = () => {
      if (runStart < 0) return;
      const piece = text.slice(runStart, runEnd);
      runStart = -1;
      if (isArray) {
        const items = this.secureParse(`[${piece}]`) as unknown[];
        for (let k = 0; k < items.length; k++) array.push(items[k]);
      } else {
        const members = this.secureParse(`{${piece}}`) as Record<string, unknown>;
        for (const key of Object.keys(members)) object[key] = members[key];
      }
    };

    let count = 0;
    let i = this.skipWs(open + 1);
    while (i !== close) {
      if (membersMax && ++count > membersMax.max) throw membersMax.over();
      const memberStart = i;
      let keyEnd = -1;
      if (!isArray) {
        if (text.charCodeAt(i) !== QUOTE) throw bad('an object key is not a string');
        keyEnd = stringEnd(text, i);
        if (keyEnd < 0) throw bad();
        const colon = this.skipWs(keyEnd);
        if (text.charCodeAt(colon) !== COLON) throw bad();
        i = this.skipWs(colon + 1);
      }
      const valueEnd = this.valueEnd(i);
      if (large.has(i)) {
        flush();
        if (isArray) {
          array.push(await this.build(i));
        } else {
          const key = this.secureParse(text.slice(memberStart, keyEnd)) as string;
          const bounded = isTop && this.opts.topArrayMax?.key === key && text.charCodeAt(i) === OPEN_BRACKET;
          setMember(object, key, await this.build(i, bounded ? this.opts.topArrayMax : undefined));
        }
        await this.yieldIfDue();
      } else {
        if (runStart >= 0 && valueEnd - runStart > this.pieceChars) {
          flush();
          await this.yieldIfDue();
        }
        if (runStart < 0) runStart = memberStart;
        runEnd = valueEnd;
      }
      i = this.skipWs(valueEnd);
      if (i === close) break;
      if (text.charCodeAt(i) !== COMMA) throw bad();
      i = this.skipWs(i + 1);
      if (i === close) throw bad('a trailing comma');
    }
    flush();
    return isArray ? array : object;
  }
}

/** Sets a member built outside the native parser, refusing what Fastify's parser (secure-json-parse) refuses. */
function setMember(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') throw bad('Object contains forbidden prototype property');
  if (key === 'constructor' && typeof value === 'object' && value !== null && Object.hasOwn(value, 'prototype')) {
    throw bad('Object contains forbidden prototype property');
  }
  object[key] = value;
}

type CallbackParser = (request: never, body: string, done: (err: Error | null, body?: unknown) => void) => void;

/** A PieceParser from a Fastify content-type parser that answers synchronously (getDefaultJsonParser). */
export function pieceParser(parser: CallbackParser): PieceParser {
  return (text) => {
    let error: Error | null = null;
    let value: unknown;
    parser(undefined as never, text, (err, body) => {
      error = err;
      value = body;
    });
    if (error) throw error;
    return value;
  };
}
