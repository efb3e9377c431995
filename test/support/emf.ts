/**
 * What the functions really emit in embedded metric format: runs code with
 * the real Powertools Metrics and reads the EMF lines it writes to stdout,
 * each metric as CloudWatch makes it (namespace, name, one dimension set).
 */
import { vi } from 'vitest';

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
