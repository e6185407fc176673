/** Prometheus metrics of one node, in one registry. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  readonly eventsScheduled = new Counter({
    name: 'belfry_events_scheduled_total',
    help: 'Events accepted (created) through the API',
    registers: [this.registry],
  });
  readonly eventsFired = new Counter({
    name: 'belfry_events_fired_total',
    help: 'Events claimed for delivery (scheduled or awaiting_retry to executing)',
    registers: [this.registry],
  });
  readonly deliveries = new Counter({
    name: 'belfry_deliveries_total',
    help: 'Delivery attempts by outcome (delivered, retry, discard)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly fireLatenessSeconds = new Histogram({
    name: 'belfry_fire_lateness_seconds',
    help: 'Delay between an event being due and its delivery attempt starting',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly deliveryDurationSeconds = new Histogram({
    name: 'belfry_delivery_duration_seconds',
    help: 'Duration of delivery attempts',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly eventsPending = new Gauge({
    name: 'belfry_events',
    help: 'Stored events per state (sampled on scrape)',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'belfry_' });
  }
}
