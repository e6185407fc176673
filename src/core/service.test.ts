import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EventBus } from './event-sink.ts';
import type { DueRef, EventRecord } from './event.ts';
import { Lifecycle, type Service, type StopPhase } from './service.ts';

function recorder() {
  const log: string[] = [];
  const service = (name: string, opts: { failStart?: boolean; failStop?: boolean } = {}): Service => ({
    name,
    start: async () => {
      if (opts.failStart) throw new Error(`${name} cannot start`);
      log.push(`start ${name}`);
    },
    stop: async (deadline) => {
      log.push(`stop ${name} (${deadline})`);
      if (opts.failStop) throw new Error(`${name} cannot stop`);
    },
  });
  return { log, service };
}

describe('Lifecycle', () => {
  it('starts in the order given and stops phase by phase, each phase newest first', async () => {
    const { log, service } = recorder();
    const life = new Lifecycle(() => assert.fail('no stop fails'));
    const plan: [string, StopPhase][] = [
      ['store', 'storage'],
      ['channels', 'delivery'],
      ['dispatcher', 'delivery'],
      ['api', 'requests'],
      ['cluster', 'cluster'],
      ['scheduler', 'firing'],
      ['materialiser', 'firing'],
      ['counts', 'maintenance'],
      ['rescuer', 'maintenance'],
      ['bulk', 'intake'],
      ['sources', 'intake'],
    ];
    for (const [name, phase] of plan) await life.start(service(name), phase);
    assert.deepEqual(
      log,
      plan.map(([name]) => `start ${name}`),
    );
    assert.deepEqual(life.stopOrder(), [
      'api',
      'sources',
      'bulk',
      'cluster',
      'materialiser',
      'scheduler',
      'rescuer',
      'counts',
      'dispatcher',
      'channels',
      'store',
    ]);
    log.length = 0;
    await life.stop(42);
    assert.deepEqual(
      log,
      life.stopOrder().map((name) => `stop ${name} (42)`),
      'each stop is given the deadline',
    );
  });

  it('a service whose start fails is not stopped; those started before it are, and a failed stop does not keep the others running', async () => {
    const { log, service } = recorder();
    const failed: string[] = [];
    const life = new Lifecycle((name) => failed.push(name));
    await life.start(service('store'), 'storage');
    await life.start(service('channels', { failStop: true }), 'delivery');
    await assert.rejects(life.start(service('api', { failStart: true }), 'requests'), /api cannot start/);
    await life.stop(0);
    assert.deepEqual(log, ['start store', 'start channels', 'stop channels (0)', 'stop store (0)']);
    assert.deepEqual(failed, ['channels']);
  });

  it('stop twice stops once; nothing starts once it is stopping', async () => {
    const { log, service } = recorder();
    const life = new Lifecycle(() => {});
    await life.start(service('a'), 'firing');
    await Promise.all([life.stop(0), life.stop(0)]);
    assert.deepEqual(log, ['start a', 'stop a (0)']);
    await assert.rejects(life.start(service('b'), 'firing'), /stopping/);
  });
});

describe('EventBus', () => {
  it('hands each call to every listener that has it, in the order they were added, and skips empty batches', () => {
    const bus = new EventBus();
    const heard: string[] = [];
    bus.listen({ changed: (e) => heard.push(`1 changed ${e.length}`), due: (r) => heard.push(`1 due ${r.length}`) });
    bus.listen({
      changed: (e) => heard.push(`2 changed ${e.length}`),
      pullSettled: (e) => heard.push(`2 pullSettled ${e.length}`),
      groupSettled: (t, g) => heard.push(`2 groupSettled ${t}/${g}`),
    });
    const event = { tenantId: 't', id: 'e' } as EventRecord;
    bus.changed([event]);
    bus.due([{ tenantId: 't', id: 'e' } as DueRef]);
    bus.pullSettled([event]);
    bus.groupSettled('t', 'g');
    bus.changed([]);
    bus.due([]);
    assert.deepEqual(heard, ['1 changed 1', '2 changed 1', '1 due 1', '2 pullSettled 1', '2 groupSettled t/g']);
  });
});
