#!/usr/bin/env node
/**
 * A webhook receiver that verifies Belfry's Standard Webhooks signatures: plain Node, no
 * dependencies. Run it, point a Belfry destination at it, and it prints one JSON line per
 * delivery it accepts.
 *
 *   WEBHOOK_SECRET=whsec_... PORT=8080 node docs/examples/verify-webhook.mjs
 *
 * WEBHOOK_SECRET may list several secrets separated by commas (yours, while you rotate).
 * Belfry signs with every active secret of the destination (during its rotation grace period,
 * the old and the new), so a receiver that knows any one of them verifies.
 *
 * What a receiver must do (https://www.standardwebhooks.com):
 *   1. Read the raw body: verify the bytes as received, before any JSON parsing.
 *   2. Refuse a webhook-timestamp more than 5 minutes from your clock (replays).
 *   3. Recompute HMAC-SHA256 over `${webhook-id}.${webhook-timestamp}.${body}`, keyed by the
 *      base64-decoded part of the secret after `whsec_`, and compare it in constant time with
 *      each `v1,<base64>` entry of webhook-signature.
 *   4. De-duplicate on webhook-id: delivery is at least once.
 * The reference libraries do all of this: `npm install standardwebhooks`, then
 * `new Webhook(secret).verify(rawBody, headers)`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const TOLERANCE_SEC = 5 * 60;
const BODY_BYTES_MAX = 1024 * 1024;
const SEEN_IDS_MAX = 10_000;

const secrets = (process.env.WEBHOOK_SECRET ?? '')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean)
  .map((s) => Buffer.from(s.startsWith('whsec_') ? s.slice(6) : s, 'base64'));
if (secrets.length === 0) {
  console.error('set WEBHOOK_SECRET=whsec_... (the secret Belfry returned when the destination was created)');
  process.exit(2);
}

/** webhook-ids already processed (a bounded, insertion-ordered set). */
const seen = new Set();

/** Why the delivery does not verify, or null when it does. */
function verify(headers, body, nowSec = Math.floor(Date.now() / 1000)) {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures) return 'missing webhook-id, webhook-timestamp or webhook-signature';
  if (!/^\d{1,12}$/.test(timestamp) || Math.abs(nowSec - Number(timestamp)) > TOLERANCE_SEC) return 'timestamp too old or in the future';
  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`), body]);
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(signed).digest();
    for (const entry of signatures.split(' ')) {
      const [version, sig] = entry.split(',');
      if (version !== 'v1' || !sig) continue;
      const candidate = Buffer.from(sig, 'base64');
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) return null;
    }
  }
  return 'no signature matches';
}

const server = createServer((req, res) => {
  const chunks = [];
  let bytes = 0;
  req.on('data', (chunk) => {
    bytes += chunk.length;
    if (bytes > BODY_BYTES_MAX) req.destroy();
    else chunks.push(chunk);
  });
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const why = verify(req.headers, body);
    if (why) {
      console.log(JSON.stringify({ verified: false, reason: why }));
      res.writeHead(401).end(why);
      return;
    }
    const id = req.headers['webhook-id'];
    if (seen.has(id)) {
      console.log(JSON.stringify({ verified: true, duplicate: true, id }));
      res.writeHead(200).end('already processed');
      return;
    }
    seen.add(id);
    if (seen.size > SEEN_IDS_MAX) seen.delete(seen.values().next().value);
    // Only now is the body trusted: parse it and do the work.
    console.log(JSON.stringify({ verified: true, id, payload: JSON.parse(body.toString('utf8')) }));
    res.writeHead(204).end();
  });
});

server.listen(Number(process.env.PORT ?? 8080), process.env.HOST ?? '127.0.0.1', () => {
  console.log(JSON.stringify({ listening: server.address().port }));
});
