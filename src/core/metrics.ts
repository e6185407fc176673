/**
 * The metrics port: the counters, gauges and histograms that scheduler/, dispatch/ and api/
 * update, as the shapes they call. node/metrics.ts implements it with prom-client (class
 * `Metrics`, one registry per node); the layers below the node depend on this interface only, so
 * they load no metrics library and a test may hand them any implementation.
 */

/** Label values by label name (prom-client's `LabelValues`). */
export type MetricLabels<L extends string> = Partial<Record<L, string | number>>;

export interface MetricCounter<L extends string = string> {
  inc(value?: number): void;
  inc(labels: MetricLabels<L>, value?: number): void;
}

export interface MetricGauge<L extends string = string> {
  set(value: number): void;
  set(labels: MetricLabels<L>, value: number): void;
}

export interface MetricHistogram {
  observe(value: number): void;
}

/** The Prometheus text of every metric of the node (GET /metrics). */
export interface MetricsExposition {
  readonly contentType: string;
  metrics(): Promise<string>;
}

export interface Metrics {
  /** GET /metrics renders it. */
  readonly registry: MetricsExposition;

  // api/
  readonly eventsScheduled: MetricCounter;
  readonly eventsPending: MetricGauge<'state'>;
  readonly eventsSampleAgeSeconds: MetricGauge;
  readonly eventsSampleDurationSeconds: MetricGauge;
  readonly pullClaimed: MetricCounter;
  readonly pullEnded: MetricCounter<'action' | 'state'>;
  readonly pullParked: MetricGauge;

  // scheduler/
  readonly eventsFired: MetricCounter;
  readonly eventsParked: MetricGauge;
  readonly eventsClaimed: MetricGauge;
  readonly queuesOverflowed: MetricGauge;

  // dispatch/
  readonly deliveries: MetricCounter<'outcome'>;
  readonly fireLatenessSeconds: MetricHistogram;
  readonly deliveryDurationSeconds: MetricHistogram;
  readonly outcomeUnrecordedSeconds: MetricHistogram;
  readonly outcomeBatchesSetAside: MetricCounter;
  readonly outcomesDropped: MetricCounter;
}
