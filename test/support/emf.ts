/**
 * What the functions really emit in embedded metric format: runs code with
 * the real Powertools Metrics and reads the EMF lines it writes to stdout,
 * each metric as CloudWatch makes it (namespace, name, one dimension set).
 */
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { LambdaFunctionURLEvent } from 'aws-lambda';
import { vi } from 'vitest';
import { metricsRecorder } from '../../functions/adapters/metrics.js';
import { AccessPolicy } from '../../functions/core/access-policy.js';
import { systemClock } from '../../functions/core/clock.js';
import { fixedPolicy } from '../../functions/core/policy-source.js';
import { createVendApp } from '../../functions/vend-token/app.js';
import { example } from '../../infra/stages/example.js';

/** One CloudWatch metric: its namespace, name and dimensions (name to value). */
export interface MetricIdentity {
  readonly namespace: string;
  readonly name: string;
  readonly dimensions: Readonly<Record<string, string>>;
}

interface EmfRecord {
  _aws: {
    CloudWatchMetrics: Array<{
      Namespace: string;
      Dimensions: string[][];
      Metrics: Array<{ Name: string }>;
    }>;
  };
  [key: string]: unknown;
}

/** The metrics of the EMF lines `run` writes: one per metric and dimension set. */
export async function emittedMetrics(
  run: () => Promise<unknown> | unknown,
): Promise<MetricIdentity[]> {
  const lines: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: unknown) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  const metrics: MetricIdentity[] = [];
  for (const line of lines.flatMap((l) => l.split('\n')).filter((l) => l.startsWith('{'))) {
    const record = JSON.parse(line) as EmfRecord;
    for (const directive of record._aws?.CloudWatchMetrics ?? []) {
      for (const set of directive.Dimensions) {
        for (const metric of directive.Metrics) {
          metrics.push({
            namespace: directive.Namespace,
            name: metric.Name,
            dimensions: Object.fromEntries(set.map((d) => [d, String(record[d])])),
          });
        }
      }
    }
  }
  return metrics;
}

/** A template alarm's (or metric stat's) metric as a MetricIdentity. */
export function watchedMetric(metric: {
  Namespace: string;
  MetricName: string;
  Dimensions?: Array<{ Name: string; Value: unknown }>;
}): MetricIdentity {
  return {
    namespace: metric.Namespace,
    name: metric.MetricName,
    dimensions: Object.fromEntries((metric.Dimensions ?? []).map((d) => [d.Name, d.Value])),
  } as MetricIdentity;
}

/** Whether two identities are the same CloudWatch metric (dimension order aside). */
export function sameMetric(a: MetricIdentity, b: MetricIdentity): boolean {
  const keys = (m: MetricIdentity) => Object.keys(m.dimensions).sort();
  return (
    a.namespace === b.namespace &&
    a.name === b.name &&
    JSON.stringify(keys(a)) === JSON.stringify(keys(b)) &&
    keys(a).every((k) => a.dimensions[k] === b.dimensions[k])
  );
}

/**
 * The vend app with real Powertools Metrics (service `vend-token`) and the
 * example stage's policy, whose token source throws `error`, and a signed
 * caller's request for `ba_123`: what a release or a provider outage answers.
 * Each `answer()` vends once and publishes the metrics, as the handler does.
 */
export function failingVend(error: Error): { answer(): Promise<number> } {
  const metrics = new Metrics({ namespace: 'TokenVending', serviceName: 'vend-token' });
  const vend = createVendApp({
    tokens: {
      getToken: () => {
        throw error;
      },
    },
    policy: fixedPolicy(AccessPolicy.parse(JSON.stringify(example.accessPolicy), 'test')),
    logger: { info: () => {}, warn: () => {}, error: () => {} },
    clock: systemClock,
    recordVend: metricsRecorder(metrics).recordVend,
  });
  const event = {
    rawPath: '/token',
    rawQueryString: 'scope=ba_123',
    requestContext: {
      http: { method: 'GET' },
      authorizer: { iam: { userArn: 'arn:aws:iam::111122223333:role/checkout' } },
    },
  } as unknown as LambdaFunctionURLEvent;
  return {
    answer: async () => {
      const { statusCode } = (await vend(event)) as { statusCode: number };
      metrics.publishStoredMetrics();
      return statusCode;
    },
  };
}
