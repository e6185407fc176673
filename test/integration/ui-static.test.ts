/**
 * /ui as served: the page, its CSP and security headers, the library files by name only (nothing
 * else of node_modules), and GET /v1/destinations/{name}/health's answers. The page itself in a
 * browser: test/browser/dashboard.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { bearer, makeTestApp, type TestApp } from '../support/app.ts';

let t: TestApp;
before(async () => {
  t = await makeTestApp();
});
after(() => t.cleanup());

test('/ui redirects to /ui/, the page, with a CSP that allows no inline script and no eval', async () => {
  const r = await t.app.inject({ method: 'GET', url: '/ui' });
  assert.equal(r.statusCode, 302);
  assert.equal(r.headers.location, '/ui/');
  const page = await t.app.inject({ method: 'GET', url: '/ui/' });
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  assert.match(page.body, /<script type="module" src="\/ui\/app.js"><\/script>/);
  const csp = String(page.headers['content-security-policy']);
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'self' 'sha256-[A-Za-z0-9+/]+=*'(;|$)/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.equal(page.headers['x-content-type-options'], 'nosniff');
  assert.equal(page.headers['set-cookie'], undefined);
  // The page's only inline script is the import map whose hash the CSP names.
  assert.equal(page.body.match(/<script(?![^>]*\bsrc=)[^>]*>/g)?.length, 1);
});

test('the library files are served by name; nothing else of node_modules is', async () => {
  for (const [file, type] of [
    ['preact.mjs', /javascript/],
    ['hooks.mjs', /javascript/],
    ['htm.mjs', /javascript/],
    ['uPlot.iife.min.js', /javascript/],
    ['uPlot.min.css', /css/],
    ['pico.min.css', /css/],
  ] as const) {
    const r = await t.app.inject({ method: 'GET', url: `/ui/vendor/${file}` });
    assert.equal(r.statusCode, 200, file);
    assert.match(String(r.headers['content-type']), type, file);
    assert.ok(r.headers['content-security-policy'], file);
  }
  for (const url of [
    '/ui/vendor/package.json',
    '/ui/vendor/..%2Fpackage.json',
    '/ui/../package.json',
    '/ui/%2e%2e/package.json',
    '/ui/vendor/',
  ]) {
    const r = await t.app.inject({ method: 'GET', url });
    assert.ok(r.statusCode === 404 || r.statusCode === 403 || r.statusCode === 400, `${url}: ${r.statusCode}`);
    assert.doesNotMatch(r.body, /"name":\s*"belfry"/, url);
  }
});

test("GET /v1/destinations/{name}/health: 404 for an unknown one, the node's figures for a known one, 503 where none are kept", async () => {
  const put = await t.app.inject({
    method: 'PUT',
    url: '/v1/destinations/orders',
    headers: bearer(t.tenantKey),
    payload: { url: 'http://127.0.0.1:9/hook' },
  });
  assert.equal(put.statusCode, 201, put.body);
  const missing = await t.app.inject({
    method: 'GET',
    url: '/v1/destinations/nope/health',
    headers: bearer(t.tenantKey),
  });
  assert.equal(missing.statusCode, 404);
  // The in-process test app runs no dispatcher: no figures to read.
  const none = await t.app.inject({
    method: 'GET',
    url: '/v1/destinations/orders/health',
    headers: bearer(t.tenantKey),
  });
  assert.equal(none.statusCode, 503);
  // Another tenant cannot read this tenant's destination.
  const other = await t.app.inject({
    method: 'GET',
    url: '/v1/destinations/orders/health',
    headers: bearer(t.tenantKeyB),
  });
  assert.equal(other.statusCode, 404);
  const asked: [string, string][] = [];
  t.deps.destinationHealth = (tenantId, name) => {
    asked.push([tenantId, name]);
    return {
      nodeId: 'node-a',
      queue: {
        circuit: 'open',
        waiting: 3,
        inFlight: 1,
        claimed: 4,
        deliveries: 20,
        successRate: 0.25,
        p99DurationMs: 812,
      },
    };
  };
  try {
    const r = await t.app.inject({
      method: 'GET',
      url: '/v1/destinations/orders/health',
      headers: bearer(t.tenantKey),
    });
    assert.equal(r.statusCode, 200, r.body);
    assert.deepEqual(r.json(), {
      name: 'orders',
      nodeId: 'node-a',
      queue: {
        circuit: 'open',
        waiting: 3,
        inFlight: 1,
        claimed: 4,
        deliveries: 20,
        successRate: 0.25,
        p99DurationMs: 812,
      },
    });
    assert.deepEqual(asked, [[t.tenantId, 'orders']]);
  } finally {
    delete t.deps.destinationHealth;
  }
});
