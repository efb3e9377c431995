import {
  InvokeCommand,
  type InvokeCommandOutput,
  LambdaClient,
  ResourceNotFoundException,
} from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { LambdaInvoker } from '../../functions/adapters/lambda-invoker.js';
import { AdminError } from '../../functions/admin/admin-event.js';

const lambda = mockClient(LambdaClient);
/** A JSON payload as Lambda returns it (the SDK wraps the bytes in a blob adapter). */
const encode = (value: unknown) =>
  new TextEncoder().encode(JSON.stringify(value)) as unknown as InvokeCommandOutput['Payload'];

beforeEach(() => lambda.reset());

describe('LambdaInvoker', () => {
  it('invokes synchronously with the JSON payload and returns the parsed result', async () => {
    lambda
      .on(InvokeCommand)
      .resolves({ StatusCode: 200, Payload: encode({ status: 'refreshed' }) });

    const result = await new LambdaInvoker(new LambdaClient({})).invoke('fn-refresh', {
      action: 'refresh',
      scope: 'ba_1',
    });

    expect(result).toEqual({ status: 'refreshed' });
    const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
    expect(input).toMatchObject({ FunctionName: 'fn-refresh', InvocationType: 'RequestResponse' });
    expect(JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array))).toEqual({
      action: 'refresh',
      scope: 'ba_1',
    });
  });

  it('turns a function error into an AdminError carrying the code its message starts with', async () => {
    lambda.on(InvokeCommand).resolves({
      StatusCode: 200,
      FunctionError: 'Unhandled',
      Payload: encode({
        errorType: 'KeyIssuingFailedError',
        errorMessage:
          'key_issuing_failed: 1 of 1 business applications failed: ba_x (feature_not_enabled)',
      }),
    });

    const error = await new LambdaInvoker(new LambdaClient({}))
      .invoke('fn-keys', {})
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(AdminError);
    expect(error).toMatchObject({ code: 'key_issuing_failed' });
    expect((error as Error).message).toBe(
      'key_issuing_failed: 1 of 1 business applications failed: ba_x (feature_not_enabled)',
    );
  });

  it('names a function error without a code function_error', async () => {
    lambda.on(InvokeCommand).resolves({
      FunctionError: 'Unhandled',
      Payload: encode({
        errorType: 'Runtime.ExitError',
        errorMessage: 'RequestId: x Error: exited',
      }),
    });

    await expect(new LambdaInvoker(new LambdaClient({})).invoke('fn', {})).rejects.toMatchObject({
      code: 'function_error',
    });
  });

  it('names an SDK failure invoke_failed, without the SDK message', async () => {
    lambda.on(InvokeCommand).rejects(
      new ResourceNotFoundException({
        $metadata: {},
        message: 'Function not found: arn:aws:lambda:eu-west-1:111122223333:function:fn',
      }),
    );

    const error = await new LambdaInvoker(new LambdaClient({}))
      .invoke('fn', {})
      .catch((e: unknown) => e);

    expect(error).toMatchObject({ code: 'invoke_failed' });
    expect((error as Error).message).toBe(
      'invoke_failed: could not invoke fn (ResourceNotFoundException)',
    );
  });
});
