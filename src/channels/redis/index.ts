/**
 * The `redis` channel's surface: its registration spec (spec.ts) and the channel that delivers
 * (channel.ts). The registry imports the spec at start and loads the channel, with its client
 * library, on the first delivery to a `redis` destination.
 */
export * from './spec.ts';
export * from './channel.ts';
