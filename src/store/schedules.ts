/** The schedule part of the Store, at the path it has always had: see parts/schedules.ts. */
export * from './parts/schedules.ts';
