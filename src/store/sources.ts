/** The source part of the Store, at the path it has always had: see parts/sources.ts. */
export * from './parts/sources.ts';
