/**
 * Stand-ins for the Powertools logger and metrics that do nothing: a what-if
 * bundle of bench/import-steps.ts replaces both packages with this module to
 * show what any logger and metrics, however light, could save at the vend
 * function's cold start (at most what Powertools costs there). Only the
 * members the vend function uses.
 */
export const MetricUnit = { Count: 'Count', Milliseconds: 'Milliseconds' } as const;

export class Logger {
  addContext(_context: unknown): void {}
  info(_message: string, ..._extra: unknown[]): void {}
  warn(_message: string, ..._extra: unknown[]): void {}
  error(_message: string, ..._extra: unknown[]): void {}
}

export class Metrics {
  addMetric(_name: string, _unit: string, _value: number): void {}
  addDimension(_name: string, _value: string): this {
    return this;
  }
  singleMetric(): this {
    return this;
  }
  publishStoredMetrics(): void {}
}
