/**
 * A DynamoDB Local client on which a write reaches the table but its reply is
 * lost: the first attempt of each UpdateItem is sent and applied, then the
 * client sees a timeout in place of the answer, and the SDK's own retry
 * resends the same request (without a backoff wait). It counts the
 * UpdateItem requests it sends; with `losing: false` it only counts.
 * `unavailableFor` picks UpdateItems that never reach the table: each attempt
 * times out, so the SDK gives up after its retries (DynamoDB down for that write).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ConfiguredRetryStrategy } from '@smithy/core/retry';
import { inject } from 'vitest';
import { TEST_CREDENTIALS, TEST_REGION } from './dynamodb.js';

export interface LostReplyClient {
  readonly client: DynamoDBClient;
  /** How many replies were lost so far. */
  readonly lost: () => number;
  /** How many UpdateItem requests were sent so far (resends included). */
  readonly updatesSent: () => number;
  /** Whether replies are lost from now on. */
  losing: boolean;
}

export function lostReplyClient(
  options: {
    losing?: boolean;
    unavailableFor?: (input: { UpdateExpression?: string }) => boolean;
  } = {},
): LostReplyClient {
  const client = new DynamoDBClient({
    region: TEST_REGION,
    endpoint: inject('dynamodbEndpoint'),
    credentials: TEST_CREDENTIALS,
    retryStrategy: new ConfiguredRetryStrategy(3, () => 0),
  });
  const seen = new WeakSet<object>();
  let lost = 0;
  let updates = 0;
  const world: LostReplyClient = {
    client,
    lost: () => lost,
    updatesSent: () => updates,
    losing: options.losing ?? true,
  };
  // The deserialize step runs inside the retry loop: once per attempt.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const update = context.commandName === 'UpdateItemCommand';
      if (update) updates += 1;
      if (update && options.unavailableFor?.(args.input as { UpdateExpression?: string })) {
        throw Object.assign(new Error('DynamoDB did not answer'), { name: 'TimeoutError' });
      }
      const reply = await next(args);
      const input = args.input as object;
      if (world.losing && update && !seen.has(input)) {
        seen.add(input);
        lost += 1;
        throw Object.assign(new Error('the reply was lost'), { name: 'TimeoutError' });
      }
      return reply;
    },
    { step: 'deserialize', name: 'loseFirstUpdateReply', priority: 'high' },
  );
  return world;
}
