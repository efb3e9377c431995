/**
 * Starts DynamoDB Local once per test run (unless `DYNAMODB_ENDPOINT` points at
 * an existing one) and hands its endpoint to tests as `inject('dynamodbEndpoint')`.
 */
import type { TestProject } from 'vitest/node';
import { type DynamoDbLocal, startDynamoDbLocal } from '../../local/dynamodb-local.js';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Quiet the AWS SDK's Node 22 notice in this (main) process too.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const existing = process.env.DYNAMODB_ENDPOINT;
  let local: DynamoDbLocal | undefined;
  if (existing) {
    project.provide('dynamodbEndpoint', existing);
  } else {
    local = await startDynamoDbLocal();
    project.provide('dynamodbEndpoint', local.endpoint);
  }
  return async () => {
    await local?.stop();
  };
}
