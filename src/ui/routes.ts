/**
 * The dashboard at /ui: static ES modules from src/ui/public and a fixed list of library files
 * from node_modules, served by the node itself (no CDN, no build step).
 *
 * Security: every /ui response carries a Content-Security-Policy that allows scripts from this
 * origin only ('self', plus the hash of index.html's one inline import map, which maps the bare
 * `preact` import of preact/hooks to the served file): no inline script, no eval. The page talks
 * to the API with the key in the Authorization header (sessionStorage, never a cookie), so a
 * cross-site request carries no credential.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

const PUBLIC_DIR = join(dirname(fileURLToPath(import.meta.url)), 'public');
const require = createRequire(import.meta.url);

/** A package's directory in node_modules, found from its main entry (not every package exports its package.json). */
function packageDir(name: string): string {
  const main = require.resolve(name);
  const marker = join('node_modules', name) + sep;
  const at = main.lastIndexOf(marker);
  if (at < 0) throw new Error(`cannot find the directory of ${name} from ${main}`);
  return main.slice(0, at + marker.length - 1);
}

/** The library files the page loads, by the name it asks for: [directory, file]. Nothing else of node_modules is reachable. */
function vendorFiles(): Map<string, [string, string]> {
  const preact = packageDir('preact');
  const htm = packageDir('htm');
  const uplot = packageDir('uplot');
  const pico = packageDir('@picocss/pico');
  return new Map<string, [string, string]>([
    ['preact.mjs', [join(preact, 'dist'), 'preact.mjs']],
    ['hooks.mjs', [join(preact, 'hooks', 'dist'), 'hooks.mjs']],
    ['htm.mjs', [join(htm, 'dist'), 'htm.mjs']],
    // The minified build (51 KB, a classic script defining the global uPlot); its ES module build is not minified (145 KB).
    ['uPlot.iife.min.js', [join(uplot, 'dist'), 'uPlot.iife.min.js']],
    ['uPlot.min.css', [join(uplot, 'dist'), 'uPlot.min.css']],
    ['pico.min.css', [join(pico, 'css'), 'pico.min.css']],
  ]);
}

/** The CSP of every /ui response: index.html's import map is the only inline script, allowed by its hash. */
export function dashboardCsp(indexHtml: string): string {
  const importMap = /<script type="importmap">([\s\S]*?)<\/script>/.exec(indexHtml);
  if (!importMap) throw new Error('src/ui/public/index.html has no import map');
  const hash = createHash('sha256').update(importMap[1]).digest('base64');
  return [
    "default-src 'none'",
    `script-src 'self' 'sha256-${hash}'`,
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export async function uiRoutes(app: FastifyInstance): Promise<void> {
  const csp = dashboardCsp(readFileSync(join(PUBLIC_DIR, 'index.html'), 'utf8'));
  const vendor = vendorFiles();
  await app.register(async (scope) => {
    scope.addHook('onSend', async (_request, reply, payload) => {
      reply.header('content-security-policy', csp);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'no-referrer');
      reply.header('x-frame-options', 'DENY');
      reply.header('cache-control', 'no-cache');
      return payload;
    });
    await scope.register(fastifyStatic, {
      root: PUBLIC_DIR,
      prefix: '/ui/',
      index: 'index.html',
      cacheControl: false,
      etag: true,
      lastModified: true,
    });
    scope.get('/ui', { schema: { hide: true } }, (_request, reply) => reply.redirect('/ui/'));
    scope.get<{ Params: { file: string } }>('/ui/vendor/:file', { schema: { hide: true } }, (request, reply) => {
      const found = vendor.get(request.params.file);
      if (!found) return reply.status(404).send({ code: 'not_found', message: 'no such file', details: [] });
      return reply.sendFile(found[1], found[0]);
    });
  });
}
