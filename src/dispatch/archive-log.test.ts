/**
 * The archive log lines: the first event archived in a queue's minute is logged with its id; the
 * rest of that minute is one count, logged when the minute has passed (at the next archive, a
 * sweep or the stop): a flood of archives writes two lines a minute per queue, not one per event.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { SimClock } from '../core/clock.ts';
import {
  ARCHIVE_LOG_SWEEP_MS,
  ARCHIVE_LOG_WINDOW_MS,
  ArchiveLog,
  archiveCauseOf,
  type ArchivedEvent,
} from './archive-log.ts';

function setup() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const clock = new SimClock();
  const log = new ArchiveLog(logger, clock);
  const shown = () => lines.map(({ level, time, pid, hostname, ...rest }) => rest);
  return { lines, clock, log, shown };
}

const archived = (id: string, queue = 'name:orders', tenantId = 't_a'): ArchivedEvent => ({
  tenantId,
  id,
  queue,
  attempts: 12,
  why: 'attempts_exhausted',
  status: 500,
});

describe('ArchiveLog', () => {
  it('logs a lone archive at once, at info, with the tenant, destination, id, attempts, why and status', () => {
    const t = setup();
    t.log.archived(archived('e1'));
    assert.deepEqual(t.shown(), [
      {
        msg: 'event archived',
        tenantId: 't_a',
        destination: 'orders',
        id: 'e1',
        attempts: 12,
        why: 'attempts_exhausted',
        status: 500,
      },
    ]);
    assert.equal(t.lines[0].level, 30);
  });

  it("names the cause by a fixed code from the dispatcher's own words, never the outcome's text", () => {
    assert.equal(archiveCauseOf('attempts exhausted (12/12): HTTP 500: Bearer sekrit'), 'attempts_exhausted');
    assert.equal(archiveCauseOf('expired before the next attempt: timeout after 10000ms'), 'expired');
    assert.equal(archiveCauseOf("missed: fired 5000 ms late, beyond the tenant's missedAfter of 1000 ms"), 'missed');
    assert.equal(archiveCauseOf(undefined), 'other');
  });

  it('a flood of 10,000 archives in one queue: one line, then one count once the minute has passed', async () => {
    const t = setup();
    for (let i = 0; i < 10_000; i++) {
      t.log.archived(archived(`e${i}`));
      t.log.sweep();
    }
    assert.equal(t.lines.length, 1);
    await t.clock.advance(ARCHIVE_LOG_WINDOW_MS - 1);
    t.log.sweep();
    assert.equal(t.lines.length, 1, 'the minute has not passed');
    await t.clock.advance(ARCHIVE_LOG_SWEEP_MS);
    t.log.sweep();
    assert.deepEqual(t.shown()[1], {
      msg: 'events archived',
      tenantId: 't_a',
      destination: 'orders',
      count: 9_999,
      lastId: 'e9999',
      lastWhy: 'attempts_exhausted',
      lastStatus: 500,
    });
    assert.equal(t.lines.length, 2);
    // The next archive starts a new minute: logged on its own again.
    t.log.archived(archived('late'));
    assert.equal(t.shown()[2].id, 'late');
  });

  it('the count of an ended minute comes before the next archive of the same queue, without a sweep', async () => {
    const t = setup();
    t.log.archived(archived('a'));
    t.log.archived(archived('b'));
    await t.clock.advance(ARCHIVE_LOG_WINDOW_MS);
    t.log.archived(archived('c'));
    assert.deepEqual(
      t.shown().map((l) => [l.msg, l.id ?? l.lastId, l.count]),
      [
        ['event archived', 'a', undefined],
        ['events archived', 'b', 1],
        ['event archived', 'c', undefined],
      ],
    );
  });

  it('each queue of each tenant has its own minute; an inline URL is named by its origin', () => {
    const t = setup();
    t.log.archived(archived('a1'));
    t.log.archived(archived('a2', 'name:billing'));
    t.log.archived(archived('b1', 'name:orders', 't_b'));
    t.log.archived(archived('u1', 'url:https://hooks.example.com'));
    t.log.archived(archived('a3'));
    assert.deepEqual(
      t.shown().map((l) => [l.tenantId, l.destination ?? l.origin, l.id]),
      [
        ['t_a', 'orders', 'a1'],
        ['t_a', 'billing', 'a2'],
        ['t_b', 'orders', 'b1'],
        ['t_a', 'https://hooks.example.com', 'u1'],
      ],
    );
  });

  it('flush (the stop) logs the counts not logged yet, and nothing for a minute with one archive', () => {
    const t = setup();
    t.log.archived(archived('a1'));
    t.log.archived(archived('a2'));
    t.log.archived(archived('b1', 'name:billing'));
    t.log.flush();
    assert.deepEqual(
      t.shown().map((l) => [l.msg, l.destination, l.count]),
      [
        ['event archived', 'orders', undefined],
        ['event archived', 'billing', undefined],
        ['events archived', 'orders', 1],
      ],
    );
    t.log.flush();
    assert.equal(t.lines.length, 3, 'a second flush has nothing to add');
  });
});
