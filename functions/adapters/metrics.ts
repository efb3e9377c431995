import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { PolicyMetric } from '../core/policy-source.js';
import type { CoreMetric } from '../core/token-service.js';

/** Core counters and per-vend metrics in embedded metric format. */
export function metricsRecorder(metrics: Metrics) {
  return {
    count: (metric: CoreMetric | PolicyMetric): void => {
      metrics.addMetric(metric, MetricUnit.Count, 1);
    },
    recordVend: (outcome: string, latencyMs: number): void => {
      const single = metrics.singleMetric();
      single.addDimension('outcome', outcome);
      single.addMetric('Vends', MetricUnit.Count, 1);
      metrics.addMetric('VendLatency', MetricUnit.Milliseconds, latencyMs);
    },
  };
}
