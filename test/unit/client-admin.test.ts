/**
 * `invokeAdminFunction`: the admin function is invoked through its `live`
 * alias, what a deploy released (a rollback moves the alias back; `$LATEST`
 * stays on the rolled-back code), unless the caller names another qualifier.
 */
import { InvokeCommand, type InvokeCommandOutput, LambdaClient } from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-vitest/extend';
import { beforeEach, describe, expect, it } from 'vitest';
import { invokeAdminFunction, LIVE_ALIAS, qualifierOf } from '../../client/admin.js';

const lambda = mockClient(LambdaClient);
const NAME = 'token-vending-prod-admin';
const ARN = `arn:aws:lambda:eu-west-1:111122223333:function:${NAME}`;

beforeEach(() => {
  lambda.reset();
  lambda.on(InvokeCommand).resolves({
    StatusCode: 200,
    Payload: new TextEncoder().encode('{"ok":true}') as InvokeCommandOutput['Payload'],
  });
});

async function invoked(functionName: string, qualifier?: string) {
  const payload = await invokeAdminFunction({
    functionName,
    event: { action: 'status' },
    region: 'eu-west-1',
    ...(qualifier === undefined ? {} : { qualifier }),
  });
  expect(payload).toBe('{"ok":true}');
  expect(lambda).toHaveReceivedCommandTimes(InvokeCommand, 1);
  return lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
}

describe('invokeAdminFunction', () => {
  it.each([NAME, ARN, `111122223333:function:${NAME}`])(
    'invokes the live alias of %s',
    async (functionName) => {
      const input = await invoked(functionName);
      expect(input).toMatchObject({ FunctionName: functionName, Qualifier: LIVE_ALIAS });
      expect(LIVE_ALIAS).toBe('live');
    },
  );

  it.each([`${NAME}:7`, `${NAME}:$LATEST`, `${ARN}:live`])(
    'invokes %s as named, with no second qualifier for Lambda to refuse',
    async (functionName) => {
      const input = await invoked(functionName);
      expect(input?.FunctionName).toBe(functionName);
      expect(input).not.toHaveProperty('Qualifier');
    },
  );

  it('invokes the qualifier it is given instead', async () => {
    expect(await invoked(NAME, '$LATEST')).toMatchObject({
      FunctionName: NAME,
      Qualifier: '$LATEST',
    });
  });
});

describe('qualifierOf', () => {
  it.each([
    [NAME, undefined],
    [`${NAME}:live`, 'live'],
    [`${NAME}:$LATEST`, '$LATEST'],
    [ARN, undefined],
    [`${ARN}:12`, '12'],
    [`111122223333:function:${NAME}`, undefined],
    [`111122223333:function:${NAME}:live`, 'live'],
  ])('reads the qualifier of %s as %s', (functionName, qualifier) => {
    expect(qualifierOf(functionName)).toBe(qualifier);
  });
});
