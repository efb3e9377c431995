/**
 * Every bounded AWS call ends at its timeout, however the service stalls:
 * real SDK clients with `boundedCalls` against loopback servers that stop
 * answering before the headers, or in the middle of the body.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { DecryptCommand, KMSClient } from '@aws-sdk/client-kms';
import { afterEach, expect, it } from 'vitest';
import { boundedCalls } from '../../functions/adapters/aws-client-options.js';

let server: Server | undefined;
afterEach(() => {
  server?.closeAllConnections();
  server?.close();
});

/** A loopback endpoint whose every answer stops where `stall` leaves it. */
async function stalling(stall: (response: ServerResponse) => void): Promise<string> {
  const listening = createServer((request, response) => {
    request.resume();
    stall(response);
  });
  server = listening;
  await new Promise<void>((ready) => listening.listen(0, '127.0.0.1', ready));
  return `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
}

const STALLS = {
  'before the headers': () => undefined,
  'in the middle of the body': (response: ServerResponse) => {
    response.writeHead(200, {
      'content-type': 'application/x-amz-json-1.0',
      'content-length': '200',
    });
    response.write('{"Item":');
  },
};

const local = {
  region: 'us-east-1',
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'local' },
};

it.each(Object.entries(STALLS))(
  'a call whose answer stalls %s fails with a TimeoutError after its attempts, not later',
  async (_stall, stall) => {
    // Regression (review): the request timer stops at the headers, so a body
    // that stalled after them held the call for the SDK's 300 s idle timeout.
    const endpoint = await stalling(stall);
    const options = boundedCalls({ requestTimeoutMs: 200, maxAttempts: 2 });
    const dynamodb = new DynamoDBClient({ ...local, endpoint, ...options });
    const kms = new KMSClient({ ...local, endpoint, ...options });

    const calls = [
      dynamodb.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'x' } } })),
      kms.send(new DecryptCommand({ CiphertextBlob: new Uint8Array([1, 2, 3]) })),
    ];

    for (const call of await Promise.allSettled(calls)) {
      expect(call).toMatchObject({ status: 'rejected', reason: { name: 'TimeoutError' } });
    }
    dynamodb.destroy();
    kms.destroy();
  },
  10_000,
);
