/**
 * The import checker behind test/architecture.test.ts: finds every import of a TypeScript or
 * JavaScript module (static `import … from`, `import '…'`, `export … from` and dynamic
 * `import('…')`, type-only ones marked) with a small tokenizer that steps over comments, strings,
 * template literals and regular expressions, so a specifier-like text inside them is never taken
 * for an import; then judges each against a rule table. It works on a tree given as a map of
 * path → text, so a test can hand it a fake tree.
 */
import { builtinModules } from 'node:module';
import { dirname, join, normalize } from 'node:path';

export interface ImportRef {
  specifier: string;
  /** Line of the specifier (1-based). */
  line: number;
  kind: 'static' | 'side-effect' | 're-export' | 'dynamic';
  /** `import type`/`export type`, or braces holding only `type` names: erased, loads nothing. */
  typeOnly: boolean;
}

type Token = { t: 'id' | 'str' | 'punct' | 'num' | 'tmpl' | 're'; v: string; line: number };

/** Keywords after which a `/` starts a regular expression, not a division. */
const REGEX_AFTER_WORDS = new Set([
  'return',
  'typeof',
  'case',
  'do',
  'else',
  'in',
  'of',
  'new',
  'delete',
  'void',
  'throw',
  'instanceof',
  'yield',
  'await',
]);

function tokenize(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  let line = 1;
  /** Open braces: true for a template literal's `${`, false for a plain `{`. */
  const braces: boolean[] = [];
  const n = text.length;

  const regexAllowed = (): boolean => {
    const prev = out[out.length - 1];
    if (!prev) return true;
    if (prev.t === 'id') return REGEX_AFTER_WORDS.has(prev.v);
    if (prev.t === 'num' || prev.t === 'str' || prev.t === 'tmpl' || prev.t === 're') return false;
    return !(prev.v === ')' || prev.v === ']' || prev.v === '}');
  };

  /** Reads a template literal's text from i (just past a backtick or a `}` closing `${`). */
  const templateRest = (): void => {
    const startLine = line;
    while (i < n) {
      const c = text[i];
      if (c === '\\') {
        i += 2;
        continue;
      }
      if (c === '\n') line++;
      if (c === '`') {
        i++;
        out.push({ t: 'tmpl', v: '', line: startLine });
        return;
      }
      if (c === '$' && text[i + 1] === '{') {
        i += 2;
        out.push({ t: 'tmpl', v: '', line: startLine });
        braces.push(true);
        return;
      }
      i++;
    }
  };

  while (i < n) {
    const c = text[i];
    if (c === '\n') {
      line++;
      i++;
    } else if (c === ' ' || c === '\t' || c === '\r') {
      i++;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < n && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? n : end + 2;
      for (let k = i; k < stop; k++) if (text[k] === '\n') line++;
      i = stop;
    } else if (c === "'" || c === '"') {
      const startLine = line;
      let v = '';
      i++;
      while (i < n && text[i] !== c) {
        if (text[i] === '\\') {
          v += text[i + 1] ?? '';
          i += 2;
          continue;
        }
        if (text[i] === '\n') break; // An unterminated string: stop at the line's end.
        v += text[i++];
      }
      i++;
      out.push({ t: 'str', v, line: startLine });
    } else if (c === '`') {
      i++;
      templateRest();
    } else if (c === '/' && regexAllowed()) {
      const startLine = line;
      i++;
      let inClass = false;
      while (i < n && text[i] !== '\n') {
        const d = text[i];
        if (d === '\\') {
          i += 2;
          continue;
        }
        if (d === '[') inClass = true;
        else if (d === ']') inClass = false;
        else if (d === '/' && !inClass) break;
        i++;
      }
      i++;
      while (i < n && /[a-z]/i.test(text[i])) i++;
      out.push({ t: 're', v: '', line: startLine });
    } else if (/[A-Za-z_$#]/.test(c)) {
      let j = i + 1;
      while (j < n && /[\w$]/.test(text[j])) j++;
      out.push({ t: 'id', v: text.slice(i, j), line });
      i = j;
    } else if (/[0-9]/.test(c)) {
      let j = i + 1;
      while (j < n && /[\w.]/.test(text[j])) j++;
      out.push({ t: 'num', v: text.slice(i, j), line });
      i = j;
    } else if (c === '{') {
      braces.push(false);
      out.push({ t: 'punct', v: c, line });
      i++;
    } else if (c === '}') {
      if (braces.pop() === true) {
        i++;
        templateRest();
      } else {
        out.push({ t: 'punct', v: c, line });
        i++;
      }
    } else {
      out.push({ t: 'punct', v: c, line });
      i++;
    }
  }
  return out;
}

const isPunct = (tok: Token | undefined, v: string): boolean => tok?.t === 'punct' && tok.v === v;
const isId = (tok: Token | undefined, v?: string): boolean => tok?.t === 'id' && (v === undefined || tok.v === v);

/** Index just past the `}` matching the `{` at `k`, or -1. Whether every name in it was `type …`. */
function braceClause(toks: Token[], k: number): { end: number; allTypes: boolean } {
  let depth = 0;
  let names = 0;
  let types = 0;
  let expectName = true;
  for (let j = k; j < toks.length; j++) {
    const tok = toks[j];
    if (isPunct(tok, '{')) depth++;
    else if (isPunct(tok, '}')) {
      depth--;
      if (depth === 0) return { end: j + 1, allTypes: names > 0 && names === types };
    } else if (isPunct(tok, ',')) expectName = true;
    else if (expectName && (tok.t === 'id' || tok.t === 'str')) {
      names++;
      if (isId(tok, 'type') && (toks[j + 1]?.t === 'id' || toks[j + 1]?.t === 'str') && !isId(toks[j + 1], 'as'))
        types++;
      expectName = false;
    } else if (isPunct(tok, ';')) return { end: -1, allTypes: false };
  }
  return { end: -1, allTypes: false };
}

/** Every import of a module's text. */
export function importsOf(text: string): ImportRef[] {
  const toks = tokenize(text);
  const out: ImportRef[] = [];
  for (let k = 0; k < toks.length; k++) {
    const tok = toks[k];
    if (tok.t !== 'id' || (tok.v !== 'import' && tok.v !== 'export')) continue;
    if (isPunct(toks[k - 1], '.')) continue; // x.import, x.export
    let j = k + 1;
    if (tok.v === 'import') {
      if (isPunct(toks[j], '.')) continue; // import.meta
      if (isPunct(toks[j], '(')) {
        const spec = toks[j + 1];
        if (spec?.t === 'str' && (isPunct(toks[j + 2], ')') || isPunct(toks[j + 2], ','))) {
          out.push({ specifier: spec.v, line: spec.line, kind: 'dynamic', typeOnly: false });
        } else {
          out.push({ specifier: '', line: tok.line, kind: 'dynamic', typeOnly: false });
        }
        continue;
      }
      if (toks[j]?.t === 'str') {
        out.push({ specifier: toks[j].v, line: toks[j].line, kind: 'side-effect', typeOnly: false });
        continue;
      }
      let typeOnly = false;
      if (isId(toks[j], 'type') && !isId(toks[j + 1], 'from') && !isPunct(toks[j + 1], ',')) {
        typeOnly = true;
        j++;
      }
      let bindings = false;
      if (isId(toks[j]) && !isId(toks[j], 'from')) {
        j++; // default binding
        bindings = true;
        if (isPunct(toks[j], ',')) j++;
        else if (isPunct(toks[j], '=')) continue; // import x = require(...)
      } else if (isId(toks[j], 'from') && isId(toks[j + 1], 'from')) {
        j++; // a default binding named `from`
        bindings = true;
      }
      if (isPunct(toks[j], '*')) {
        if (!isId(toks[j + 1], 'as') || !isId(toks[j + 2])) continue;
        j += 3;
        bindings = true;
      } else if (isPunct(toks[j], '{')) {
        const clause = braceClause(toks, j);
        if (clause.end === -1) continue;
        if (!bindings && clause.allTypes) typeOnly = true;
        j = clause.end;
        bindings = true;
      }
      if (!bindings || !isId(toks[j], 'from') || toks[j + 1]?.t !== 'str') continue;
      out.push({ specifier: toks[j + 1].v, line: toks[j + 1].line, kind: 'static', typeOnly });
    } else {
      let typeOnly = false;
      if (isId(toks[j], 'type') && (isPunct(toks[j + 1], '{') || isPunct(toks[j + 1], '*'))) {
        typeOnly = true;
        j++;
      }
      if (isPunct(toks[j], '*')) {
        j++;
        if (isId(toks[j], 'as')) j += 2;
      } else if (isPunct(toks[j], '{')) {
        const clause = braceClause(toks, j);
        if (clause.end === -1) continue;
        if (clause.allTypes) typeOnly = true;
        j = clause.end;
      } else continue; // export const, export function, export default, ...
      if (!isId(toks[j], 'from') || toks[j + 1]?.t !== 'str') continue;
      out.push({ specifier: toks[j + 1].v, line: toks[j + 1].line, kind: 're-export', typeOnly });
    }
  }
  return out;
}

/** What marks a module as a script run by hand: it reads its command line or calls main() at its top level. */
export function scriptMarkers(text: string): { what: string; line: number }[] {
  const toks = tokenize(text);
  const out: { what: string; line: number }[] = [];
  let depth = 0;
  for (let k = 0; k < toks.length; k++) {
    const tok = toks[k];
    if (tok.t === 'punct' && (tok.v === '{' || tok.v === '(' || tok.v === '[')) depth++;
    else if (tok.t === 'punct' && (tok.v === '}' || tok.v === ')' || tok.v === ']')) depth--;
    else if (isId(tok, 'process') && isPunct(toks[k + 1], '.') && isId(toks[k + 2], 'argv'))
      out.push({ what: 'process.argv', line: tok.line });
    else if (
      depth === 0 &&
      isId(tok, 'main') &&
      isPunct(toks[k + 1], '(') &&
      !isId(toks[k - 1], 'function') &&
      !isPunct(toks[k - 1], '.')
    ) {
      out.push({ what: 'a top-level main() call', line: tok.line });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Rules

/** An area of the tree: the files under a folder of src/ (the longest matching folder wins). */
export type Area = string;

export interface AreaRule {
  /** A folder under the root, with a trailing slash: `core/`, `store/sqlite/`. */
  area: Area;
  /** What it is (shown with a violation). */
  role: string;
  /** Areas whose modules it may import besides its own; `{ area, typeOnly }` allows type-only imports alone. */
  may: (Area | { area: Area; typeOnly: true })[];
}

export interface PackageRule {
  /** Package names (a bare specifier's first segment, or two for @scope), or Node built-ins (`node:sqlite`). */
  packages: string[];
  /** The only folders whose files may import them. */
  only: string[];
  why: string;
}

export interface Rules {
  areas: AreaRule[];
  packages: PackageRule[];
  /** Files exempt from the area table (they wire a layer with real neighbours); package rules still hold. */
  isTest: (path: string) => boolean;
  /** Files that may be scripts (read process.argv or call main() at their top level). */
  mayBeScript: (path: string) => boolean;
  /** Packages the tree may import at all (the manifest's dependencies); anything else is reported. */
  knownPackages: Set<string>;
}

export interface Violation {
  /** `path:line`, path relative to the tree's root. */
  at: string;
  /** The file imported (relative to the root), the package, or what marks a script. */
  target: string;
  rule: string;
}

export function areaOf(rules: Rules, path: string): AreaRule | undefined {
  let best: AreaRule | undefined;
  for (const r of rules.areas) if (path.startsWith(r.area) && (!best || r.area.length > best.area.length)) best = r;
  return best;
}

export function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

const BUILTINS = new Set(builtinModules);

/**
 * Every violation in `files` (path relative to the tree's root → text). `outside(path)` says
 * whether a relative import that leaves the tree reaches a file (test/support/... from a test).
 */
export function checkTree(
  files: Map<string, string>,
  rules: Rules,
  outside: (path: string) => boolean = () => false,
): Violation[] {
  const out: Violation[] = [];
  for (const [path, text] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    const test = rules.isTest(path);
    const from = areaOf(rules, path);
    if (!from) {
      out.push({
        at: `${path}:1`,
        target: path,
        rule: 'a file outside every area of the rule table: add its folder to the table',
      });
      continue;
    }
    for (const imp of importsOf(text)) {
      const at = `${path}:${imp.line}`;
      if (imp.specifier === '') {
        out.push({
          at,
          target: '(computed)',
          rule: 'a dynamic import of a computed specifier cannot be checked: import a literal path',
        });
        continue;
      }
      if (imp.specifier.startsWith('.')) {
        const target = normalize(join(dirname(path), imp.specifier));
        if (target.startsWith('..')) {
          if (!test)
            out.push({
              at,
              target,
              rule: 'production code imports nothing outside the tree (test/, bench/ are not shipped)',
            });
          else if (!outside(target)) out.push({ at, target, rule: 'no such file' });
          continue;
        }
        if (!files.has(target)) {
          out.push({ at, target, rule: 'no such file' });
          continue;
        }
        if (test) continue;
        const to = areaOf(rules, target);
        if (!to || to.area === from.area) continue;
        const allowed = from.may.some((m) =>
          typeof m === 'string' ? m === to.area : m.area === to.area && imp.typeOnly,
        );
        if (!allowed) {
          const typeOnlyNote = from.may.some((m) => typeof m !== 'string' && m.area === to.area)
            ? ' (type-only imports only)'
            : '';
          out.push({
            at,
            target,
            rule: `${from.area} (${from.role}) may import ${from.may.map((m) => (typeof m === 'string' ? m : `${m.area} types`)).join(', ') || 'nothing outside itself'}, not ${to.area}${typeOnlyNote}`,
          });
        }
        continue;
      }
      const bare = imp.specifier.startsWith('node:') ? imp.specifier : packageOf(imp.specifier);
      const builtin = bare.startsWith('node:') || BUILTINS.has(bare);
      if (!builtin && !rules.knownPackages.has(bare)) {
        out.push({ at, target: bare, rule: 'not a dependency in package.json' });
        continue;
      }
      for (const p of rules.packages) {
        if (p.packages.includes(bare) && !p.only.some((f) => path.startsWith(f))) {
          out.push({ at, target: bare, rule: `only ${p.only.join(', ')} import ${bare}: ${p.why}` });
        }
      }
    }
    if (!test && !rules.mayBeScript(path)) {
      for (const m of scriptMarkers(text)) {
        out.push({
          at: `${path}:${m.line}`,
          target: m.what,
          rule: 'a script run by hand (a measurement, a tool) lives in bench/, not src/',
        });
      }
    }
  }
  return out;
}

export interface Allowed {
  /** A file of the tree, relative to its root. */
  file: string;
  /** The violation's target (a file relative to the root, a package, or a script marker). */
  target: string;
  reason: string;
}

/** The violations no entry allows, and the entries that allow nothing (stale: remove them). */
export function applyAllowList(violations: Violation[], allowed: Allowed[]): { left: Violation[]; stale: Allowed[] } {
  const used = new Set<Allowed>();
  const left = violations.filter((v) => {
    const entry = allowed.find((a) => v.at.startsWith(`${a.file}:`) && v.target === a.target);
    if (entry) used.add(entry);
    return !entry;
  });
  return { left, stale: allowed.filter((a) => !used.has(a)) };
}
