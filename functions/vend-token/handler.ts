import type { Context, LambdaFunctionURLEvent, LambdaFunctionURLResult } from 'aws-lambda';
import { createAwsRuntime } from './aws-runtime.js';

// Thin wiring: configuration is read and checked once at start; an invalid
// access policy or a missing variable stops the function with a clear message.
const { runtime, logger, metrics } = createAwsRuntime(process.env, 'vend-token');

export const handler = async (
  event: LambdaFunctionURLEvent,
  context: Context,
): Promise<LambdaFunctionURLResult> => {
  logger.addContext(context);
  try {
    return await runtime.app(event);
  } finally {
    metrics.publishStoredMetrics();
  }
};
