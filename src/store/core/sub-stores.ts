/**
 * The schedule and source methods of each backend: its Store hands every one of them to the
 * sub-store it holds (`schedules`, `sources`), which keeps that part's SQL. `delegateToSubStores`
 * puts those methods on the backend's prototype once, so no backend spells out the same fourteen
 * one-line methods; a backend declares them by merging `SubStoreMethods` into its class.
 */
import type { ScheduleStore } from '../schedules.ts';
import type { SourceStore } from '../sources.ts';

export type SubStoreMethods = ScheduleStore & SourceStore;

/** Every method of each sub-store's interface (the types below fail to compile when one is missing). */
const SCHEDULE_METHODS = [
  'scheduleCreate', 'scheduleGet', 'scheduleList', 'scheduleUpdate', 'scheduleDelete', 'scheduleListDue', 'scheduleListCatchUp', 'scheduleCountsAdd', 'scheduleAdvance', 'scheduleAdvanceMany', 'scheduleOccurrenceList',
] as const satisfies readonly (keyof ScheduleStore)[];
const SOURCE_METHODS = [
  'sourcePut', 'sourceGet', 'sourceList', 'sourceListAll', 'sourceDelete', 'sourceReport',
] as const satisfies readonly (keyof SourceStore)[];

type Missing<I, Listed extends readonly PropertyKey[]> = Exclude<keyof I, Listed[number]>;
const everyScheduleMethod: [Missing<ScheduleStore, typeof SCHEDULE_METHODS>] extends [never] ? true : never = true;
const everySourceMethod: [Missing<SourceStore, typeof SOURCE_METHODS>] extends [never] ? true : never = true;
void everyScheduleMethod;
void everySourceMethod;

/** What a backend holds: one sub-store of each kind (private fields are fine: read at run time). */
interface HoldsSubStores {
  schedules: ScheduleStore;
  sources: SourceStore;
}

function forward(proto: object, field: keyof HoldsSubStores, methods: readonly string[]): void {
  for (const method of methods) {
    Object.defineProperty(proto, method, {
      value(this: HoldsSubStores, params: unknown) {
        const sub = this[field] as unknown as Record<string, (p: unknown) => unknown>;
        return sub[method](params);
      },
      writable: true,
      configurable: true,
    });
  }
}

/** Puts every schedule and source method on `cls`'s prototype, each handing its call to the instance's sub-store. */
export function delegateToSubStores(cls: { prototype: object }): void {
  forward(cls.prototype, 'schedules', SCHEDULE_METHODS);
  forward(cls.prototype, 'sources', SOURCE_METHODS);
}
