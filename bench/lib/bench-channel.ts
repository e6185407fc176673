/** `--channel`: where `fire` delivers: the loopback webhook receiver (http), or a broker with a live consumer. */
export const BROKER_CHANNELS = ['kafka', 'nats', 'amqp', 'redis'] as const;
export type BenchChannel = 'http' | (typeof BROKER_CHANNELS)[number];
