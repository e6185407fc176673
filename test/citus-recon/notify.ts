import pg from 'pg';
import { PostgresDueWakeups, dueChannel } from '../../src/store/postgres/wakeups.ts';
const url = process.argv[2];
const wake = new PostgresDueWakeups(
  new pg.Pool({ connectionString: url, options: '-c search_path=scr3' }),
  url,
  'scr3',
);
const got: { id: string }[] = [];
const sub = await wake.subscribe(
  (refs) => got.push(...refs),
  (e) => console.log('listener error', e.message),
);
await wake.announce([{ tenantId: 't1', id: 'x', version: 1, dueAt: 5, shard: 85, group: null, queue: 'name:hook' }]);
// a NOTIFY issued inside a transaction that also runs router queries on a worker
const c = new pg.Client({ connectionString: url, options: '-c search_path=scr3' });
await c.connect();
await c.query('BEGIN');
await c.query(`UPDATE events SET version = version WHERE shard = 85 AND tenant_id = 't2' AND id = 'e4'`);
await c.query('SELECT pg_notify($1, $2)', [dueChannel('scr3'), JSON.stringify([['t2', 'e4', 1, 1, 85, null, 'q']])]);
await c.query('COMMIT');
// a listener on a WORKER does not get the coordinator's notifications
const w = new pg.Client({ connectionString: url.replace(/:(\d+)\//, (_m, p) => `:${Number(p) + 1}/`) });
let workerGot = 0;
w.on('notification', () => workerGot++);
await w.connect();
await w.query(`LISTEN ${dueChannel('scr3')}`);
await wake.announce([{ tenantId: 't1', id: 'y', version: 1, dueAt: 5, shard: 85, group: null, queue: 'name:hook' }]);
await new Promise((r) => setTimeout(r, 500));
console.log(
  'coordinator listener got',
  got.length,
  'refs:',
  JSON.stringify(got.map((r) => r.id)),
  '; worker listener got',
  workerGot,
);
await sub.close();
await c.end();
await w.end();
process.exit(0);
