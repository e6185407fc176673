import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createLogger, REDACTED } from './logger.ts';

test('the node logger censors every field that may hold a secret', () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const logger = createLogger('trace', 'n1', sink);
  logger.info({ adminKey: 'adm-1', config: { adminKey: 'adm-2', port: 1 } }, 'config');
  logger.info({ req: { method: 'GET', headers: { authorization: 'Bearer bk_one', host: 'x' } } }, 'request');
  logger.warn(
    { destination: { name: 'd', secrets: [{ secret: 'whsec_aaa', expiresAt: null }], secret: 'whsec_bbb' } },
    'destination',
  );
  logger.error({ key: 'bk_two', record: { key: 'bk_three', hash: 'abc123' } }, 'key');
  logger.info(
    {
      signingSecret: 'whsec_ccc',
      tenant: { id: 't1', signingSecret: 'whsec_ddd', signingSecrets: [{ secret: 'whsec_eee', expiresAt: null }] },
    },
    'tenant',
  );
  const text = lines.join('');
  const secrets = [
    'adm-1',
    'adm-2',
    'bk_one',
    'whsec_aaa',
    'whsec_bbb',
    'bk_two',
    'bk_three',
    'abc123',
    'whsec_ccc',
    'whsec_ddd',
    'whsec_eee',
  ];
  for (const secret of secrets) assert.ok(!text.includes(secret), `${secret} leaked`);
  assert.equal(text.split(REDACTED).length - 1, 11);
  assert.match(text, /"port":1/);
  assert.match(text, /"host":"x"/);
});
