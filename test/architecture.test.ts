/**
 * The layering of src/, checked over every import of every module (static, type-only, re-exports
 * and dynamic `import('…')`): imports point one way, `core ← store ← scheduler/cluster/maintenance/dispatch ←
 * api/cli/ui`, with channels, sources and the feature folders (pull, schedules, bulk) beside them; database drivers and broker clients stay in
 * their folders; only the entry point reaches node/; no script run by hand lives in src/.
 * docs/development.md explains the table. A failure prints each offending import as file:line.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import {
  applyAllowList,
  checkTree,
  importsOf,
  scriptMarkers,
  type Allowed,
  type AreaRule,
  type PackageRule,
  type Rules,
} from './support/layering.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');

/** What each folder of src/ may import besides its own files. node/ is listed by no one but cli/. */
export const AREAS: AreaRule[] = [
  { area: 'core/', role: 'states, time, ids, shards, ports', may: [] },
  { area: 'store/', role: 'the Store interface and what both backends share', may: ['core/'] },
  { area: 'store/sqlite/', role: 'the SQLite backend', may: ['core/', 'store/'] },
  { area: 'store/postgres/', role: 'the PostgreSQL backend', may: ['core/', 'store/'] },
  { area: 'store/conformance/', role: 'the suite every backend passes', may: ['core/', 'store/'] },
  { area: 'channels/', role: 'the Channel seam and every kind', may: ['core/'] },
  { area: 'scheduler/', role: 'firing: read-ahead, admission, claims', may: ['core/', 'store/'] },
  {
    area: 'cluster/',
    role: 'cluster time, membership, leader, shard ownership',
    may: ['core/', 'store/'],
  },
  {
    area: 'maintenance/',
    role: 'background loops: retention, rescue of expired claims, count and forecast samplers',
    may: ['core/', 'store/'],
  },
  { area: 'dispatch/', role: 'virtual queues, outcomes', may: ['core/', 'store/', 'channels/'] },
  { area: 'sources/', role: 'schedule requests read from brokers', may: ['core/', 'store/', 'channels/'] },
  // Features: each folder holds one feature's service, its background role and its pure rules.
  {
    area: 'pull/',
    role: 'pull delivery: claims, settles, parked claims, expiry',
    may: ['core/', 'store/', 'dispatch/'],
  },
  {
    area: 'schedules/',
    role: 'recurring schedules: the service, the materialiser, the occurrence gate, what an occurrence is',
    may: ['core/', 'store/'],
  },
  { area: 'bulk/', role: 'bulk operations: the service, the runner, what a selection is', may: ['core/', 'store/'] },
  {
    area: 'api/',
    role: 'the HTTP API',
    may: [
      'core/',
      'store/',
      'scheduler/',
      'cluster/',
      'maintenance/',
      'dispatch/',
      'channels/',
      'sources/',
      'pull/',
      'schedules/',
      'bulk/',
      'ui/',
    ],
  },
  { area: 'ui/', role: 'the dashboard routes', may: ['core/', 'store/'] },
  { area: 'ui/public/', role: 'the dashboard in the browser', may: [] },
  {
    area: 'node/',
    role: 'config and wiring of one node',
    may: [
      'core/',
      'store/',
      'store/sqlite/',
      'store/postgres/',
      'channels/',
      'scheduler/',
      'cluster/',
      'maintenance/',
      'dispatch/',
      'sources/',
      'pull/',
      'schedules/',
      'bulk/',
      'api/',
      'ui/',
    ],
  },
  { area: 'cli/', role: 'the entry point', may: ['core/', 'node/', 'api/'] },
];

export const PACKAGES: PackageRule[] = [
  { packages: ['node:sqlite'], only: ['store/sqlite/'], why: 'a database driver stays in its backend' },
  { packages: ['pg'], only: ['store/postgres/'], why: 'a database driver stays in its backend' },
  {
    packages: ['kafkajs'],
    only: ['channels/kafka/', 'sources/kafka/'],
    why: 'a broker client stays behind its channel (and its source)',
  },
  {
    packages: ['@nats-io/transport-node', '@nats-io/jetstream'],
    only: ['channels/nats/'],
    why: 'a broker client stays behind its channel',
  },
  { packages: ['amqplib'], only: ['channels/amqp/'], why: 'a broker client stays behind its channel' },
  { packages: ['ioredis'], only: ['channels/redis/'], why: 'a broker client stays behind its channel' },
  { packages: ['undici'], only: ['channels/http/'], why: 'the HTTP client stays behind the http channel' },
  {
    packages: ['@belfry/client'],
    only: ['core/', 'channels/http/', 'cli/'],
    why: 'the SDK (packages/client): the CLI calls the API through it; core/ids.ts and the http signer take the time-sortable ids and the webhook signer it owns',
  },
  {
    packages: ['prom-client'],
    only: ['node/'],
    why: "the metrics library stays in the node's Metrics; the layers below update the port core/metrics.ts",
  },
  {
    packages: ['fastify', '@fastify/static', '@fastify/swagger'],
    only: ['api/', 'ui/', 'node/'],
    why: 'the HTTP server stays in the API and the dashboard routes (and the node that starts them)',
  },
];

/**
 * Imports that break the table and stay for now, each with its reason. Keep it short: an entry
 * that no longer matches anything fails the test, so fixing an import means removing its entry.
 */
export const ALLOWED: Allowed[] = [
  {
    file: 'maintenance/forecast-sampler.ts',
    target: 'prom-client',
    reason:
      "registers its two gauges on the node's prom-client registry, read at each scrape; moving them behind the Metrics port changes how they are collected, a change of its own",
  },
  {
    file: 'maintenance/forecast-sampler.test.ts',
    target: 'prom-client',
    reason: 'reads those gauges from a registry of its own',
  },
];

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

export const RULES: Rules = {
  areas: AREAS,
  packages: PACKAGES,
  // A test beside its code may wire that layer with real neighbours (a scheduler test on a real
  // SQLite store, a prom-client Metrics from node/metrics.ts, test/support/); the package rules
  // hold for it too.
  isTest: (path) => path.endsWith('.test.ts'),
  // The command line, and the child processes the node spawns itself (they read their argv).
  mayBeScript: (path) => path.startsWith('cli/') || path.endsWith('-child.ts'),
  knownPackages: new Set([...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)]),
};

function sourceTree(): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|mts|mjs|js)$/.test(entry.name)) files.set(relative(SRC, path), readFileSync(path, 'utf8'));
    }
  };
  walk(SRC);
  return files;
}

const show = (v: { at: string; target: string; rule: string }): string => `  src/${v.at} → ${v.target}: ${v.rule}`;

describe('architecture: the imports of src/', () => {
  const files = sourceTree();
  const violations = checkTree(files, RULES, (path) => existsSync(join(SRC, path)));
  const { left, stale } = applyAllowList(violations, ALLOWED);

  it('follow the rule table (the allow-list aside)', () => {
    assert.ok(files.size > 300, `read ${files.size} files of src/`);
    assert.equal(left.length, 0, `${left.length} imports break the layering:\n${left.map(show).join('\n')}`);
  });

  it('need every entry of the allow-list', () => {
    assert.deepEqual(
      stale.map((a) => `${a.file} → ${a.target}`),
      [],
      'remove the entries that allow nothing',
    );
  });

  it('find the imports grep finds', () => {
    // A cross-check of the tokenizer on the real tree: every line holding `from '…'` at its
    // start-of-statement shape, or `import('…')`, yields an import on that line.
    let lines = 0;
    for (const [path, text] of files) {
      const found = new Set(importsOf(text).map((i) => i.line));
      text.split('\n').forEach((l, k) => {
        if (
          /^\s*(import|export)\b.*\bfrom\s+'[^']+';?\s*$|^\s*\}\s*from\s+'[^']+';?\s*$|^\s*import\s+'[^']+';?\s*$/.test(
            l,
          )
        ) {
          lines++;
          assert.ok(found.has(k + 1), `src/${path}:${k + 1} holds an import the checker missed: ${l.trim()}`);
        }
      });
    }
    assert.ok(lines > 1_000, `checked ${lines} import lines`);
  });
});

describe('architecture: store/', () => {
  it('has no import cycle among its modules (type-only imports counted)', () => {
    // A part's records live with its part (store/parts/), so nothing in store/ needs a module
    // that needs it back: store.ts and schedules.ts once imported each other.
    const files = sourceTree();
    const graph = new Map<string, string[]>();
    for (const [path, text] of files) {
      if (!path.startsWith('store/') || path.endsWith('.test.ts')) continue;
      const targets = importsOf(text)
        .filter((i) => i.specifier.startsWith('.'))
        .map((i) => join(dirname(path), i.specifier))
        .filter((t) => t.startsWith('store/') && files.has(t));
      graph.set(path, targets);
    }
    assert.ok(graph.size > 50, `read ${graph.size} modules of store/`);
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (path: string, stack: string[]): void => {
      if (state.get(path) === 'done') return;
      if (state.get(path) === 'open') {
        cycles.push([...stack.slice(stack.indexOf(path)), path].join(' → '));
        return;
      }
      state.set(path, 'open');
      for (const t of graph.get(path) ?? []) visit(t, [...stack, path]);
      state.set(path, 'done');
    };
    for (const path of [...graph.keys()].sort()) visit(path, []);
    assert.deepEqual(cycles, [], 'modules of store/ that import each other');
  });
});

describe('the repository cites only itself', () => {
  it('names no design document kept outside it, in README.md, docs/, src/, test/ or bench/', () => {
    const outsider = ['DESIGN', 'md'].join('.');
    const hits: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
          if (path !== join(ROOT, 'bench', 'results')) walk(path);
        } else if (/\.(ts|mts|mjs|js|md|sql|html|css)$/.test(entry.name)) {
          readFileSync(path, 'utf8')
            .split('\n')
            .forEach((l, k) => {
              if (l.includes(outsider)) hits.push(`${relative(ROOT, path)}:${k + 1}`);
            });
        }
      }
    };
    for (const dir of ['docs', 'src', 'test', 'bench']) walk(join(ROOT, dir));
    readFileSync(join(ROOT, 'README.md'), 'utf8')
      .split('\n')
      .forEach((l, k) => {
        if (l.includes(outsider)) hits.push(`README.md:${k + 1}`);
      });
    assert.deepEqual(hits, [], "say it in the repository's own words, or cite a file of the repository");
  });
});

describe('architecture: the checker itself', () => {
  const rules: Rules = {
    ...RULES,
    // An area that may import another for its types only (the SDK was one, before it became a package).
    areas: [...AREAS, { area: 'client/', role: 'a fake area', may: ['core/', { area: 'api/', typeOnly: true }] }],
    knownPackages: new Set(['pg', 'kafkajs', 'undici', 'prom-client']),
  };
  const tree = (files: Record<string, string>) => new Map(Object.entries(files));
  const check = (files: Record<string, string>) => checkTree(tree(files), rules).map((v) => `${v.at} → ${v.target}`);

  it('reads every form of import, and none inside comments, strings, templates or regular expressions', () => {
    const text = [
      "import a from './a.ts';",
      "import type { B } from './b.ts';",
      "import { type C, type D } from './c.ts';",
      "import { type E, f } from './e.ts';",
      "import * as g from './g.ts';",
      "import h, { i } from './h.ts';",
      "import './side.ts';",
      "export * from './star.ts';",
      "export { j } from './j.ts';",
      "export type { K } from './k.ts';",
      "const m = await import('./dyn.ts');",
      "type N = import('./type-dyn.ts').N;",
      "// import x from './comment.ts';",
      "/* import y from './block.ts'; */",
      'const s = "import z from \'./string.ts\'";',
      "const t = `import w from './template.ts' ${a + `import('./nested.ts')`}`;",
      "const r = /import v from '.\\/regex.ts'/;",
      "const u = Buffer.from('./not-an-import.ts');",
      "export const o = { from: './object.ts' };",
      'import {',
      '  p,',
      '  q,',
      "} from './multi.ts';",
      'if (import.meta.url) void 0;',
    ].join('\n');
    assert.deepEqual(
      importsOf(text).map((i) => `${i.line} ${i.kind}${i.typeOnly ? ' type' : ''} ${i.specifier}`),
      [
        '1 static ./a.ts',
        '2 static type ./b.ts',
        '3 static type ./c.ts',
        '4 static ./e.ts',
        '5 static ./g.ts',
        '6 static ./h.ts',
        '7 side-effect ./side.ts',
        '8 re-export ./star.ts',
        '9 re-export ./j.ts',
        '10 re-export type ./k.ts',
        '11 dynamic ./dyn.ts',
        '12 dynamic ./type-dyn.ts',
        '23 static ./multi.ts',
      ],
    );
  });

  it('marks scripts: a command line read, a top-level main() call', () => {
    assert.deepEqual(
      scriptMarkers('const n = Number(process.argv[2]);\nasync function main() {}\nawait main();\n').map(
        (m) => `${m.line} ${m.what}`,
      ),
      ['1 process.argv', '3 a top-level main() call'],
    );
    assert.deepEqual(
      scriptMarkers('export async function main(argv: string[]) { await run(argv); }\nfunction f() { main(); }'),
      [],
    );
  });

  it('passes a tree that follows the table', () => {
    assert.deepEqual(
      check({
        'core/clock.ts': "import { x } from './time.ts';",
        'core/time.ts': '',
        'store/store.ts': "import type { Clock } from '../core/clock.ts';",
        'store/sqlite/sqlite-store.ts':
          "import { DatabaseSync } from 'node:sqlite';\nimport type { Store } from '../store.ts';",
        'scheduler/scheduler.ts': "import type { Store } from '../store/store.ts';",
        'node/node.ts':
          "import { Scheduler } from '../scheduler/scheduler.ts';\nimport { openSqlite } from '../store/sqlite/sqlite-store.ts';",
        'cli/start.ts': "import { startNode } from '../node/node.ts';\nconst argv = process.argv;",
      }),
      [],
    );
  });

  it('fails on each kind of violation, at its file and line', () => {
    assert.deepEqual(
      check({
        'core/clock.ts': "\nimport type { Metrics } from '../node/metrics.ts';",
        'node/metrics.ts': "import { Counter } from 'prom-client';",
        'scheduler/scheduler.ts':
          "import type { Metrics } from '../node/metrics.ts';\nimport { Db } from '../store/sqlite/db.ts';\nconst pg = await import('pg');",
        'store/sqlite/db.ts': '',
        'store/store.ts': "export * from './sqlite/db.ts';\nimport { DatabaseSync } from 'node:sqlite';",
        'channels/http/index.ts': "import { Agent } from 'undici';\nimport { Store } from '../../store/store.ts';",
        'channels/kafka/index.ts': "import { Agent } from 'undici';",
        'sources/kafka/reader.ts': "import { Kafka } from 'kafkajs';\nimport { Consumer } from 'kafkajs/consumer';",
        'api/app.ts':
          "import { x } from '../../test/support/app.ts';\nimport { y } from './missing.ts';\nimport { z } from 'left-pad';",
        'api/app.test.ts':
          "import { x } from '../../test/support/app.ts';\nimport { m } from '../node/metrics.ts';\nimport pg from 'pg';",
        'store/measure.ts': 'const n = process.argv[2];\nawait main();',
        'client/client.ts': "import type { A } from '../api/app.ts';\nimport { B } from '../api/app.ts';",
        'misc/x.ts': '',
      }),
      [
        'api/app.test.ts:1 → ../test/support/app.ts', // no such file outside the tree in this fake
        'api/app.test.ts:3 → pg',
        'api/app.ts:1 → ../test/support/app.ts',
        'api/app.ts:2 → api/missing.ts',
        'api/app.ts:3 → left-pad',
        'channels/http/index.ts:2 → store/store.ts',
        'channels/kafka/index.ts:1 → undici',
        'client/client.ts:2 → api/app.ts',
        'core/clock.ts:2 → node/metrics.ts',
        'misc/x.ts:1 → misc/x.ts',
        'scheduler/scheduler.ts:1 → node/metrics.ts',
        'scheduler/scheduler.ts:2 → store/sqlite/db.ts',
        'scheduler/scheduler.ts:3 → pg',
        'store/measure.ts:1 → process.argv',
        'store/measure.ts:2 → a top-level main() call',
        'store/store.ts:1 → store/sqlite/db.ts',
        'store/store.ts:2 → node:sqlite',
      ],
    );
  });

  it('lets an allow-list entry excuse one import, and reports an entry that excuses nothing', () => {
    const violations = checkTree(
      tree({ 'scheduler/a.ts': "import { m } from '../node/m.ts';", 'node/m.ts': '' }),
      rules,
    );
    const { left, stale } = applyAllowList(violations, [
      { file: 'scheduler/a.ts', target: 'node/m.ts', reason: 'for now' },
      { file: 'dispatch/b.ts', target: 'node/m.ts', reason: 'fixed already' },
    ]);
    assert.deepEqual(left, []);
    assert.deepEqual(
      stale.map((s) => s.file),
      ['dispatch/b.ts'],
    );
  });
});
