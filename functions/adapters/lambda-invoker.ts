import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { AdminError, InvokedFunctionError } from '../admin/admin-event.js';

/** A function error's message starts with its code (`feature_not_enabled: ...`), by our convention. */
const CODE = /^([a-z][a-z_]{2,40}):/;

/**
 * Invokes another of our functions synchronously and returns its result. A
 * function error becomes an InvokedFunctionError (an AdminError) with the code
 * its message starts with (else `function_error`), so the caller sees e.g.
 * `feature_not_enabled`, and the invoked function's own alarms judge it; an
 * SDK failure (the admin could not invoke it) becomes `invoke_failed`.
 */
export class LambdaInvoker {
  readonly #client: LambdaClient;

  constructor(client: LambdaClient) {
    this.#client = client;
  }

  async invoke<T>(functionName: string, payload: unknown): Promise<T> {
    let text: string;
    let functionError: string | undefined;
    try {
      const out = await this.#client.send(
        new InvokeCommand({
          FunctionName: functionName,
          InvocationType: 'RequestResponse',
          Payload: new TextEncoder().encode(JSON.stringify(payload)),
        }),
      );
      text = out.Payload ? new TextDecoder().decode(out.Payload) : 'null';
      functionError = out.FunctionError;
    } catch (error) {
      const name = error instanceof Error ? error.name : 'Error';
      throw new AdminError('invoke_failed', `could not invoke ${functionName} (${name})`, {
        cause: error,
      });
    }
    if (functionError !== undefined) {
      const message = errorMessage(text) ?? functionError;
      const code = CODE.exec(message)?.[1];
      throw new InvokedFunctionError(
        functionName,
        code ?? 'function_error',
        code ? message.slice(code.length + 1).trim() : message,
      );
    }
    return JSON.parse(text) as T;
  }
}

function errorMessage(payload: string): string | undefined {
  try {
    const parsed = JSON.parse(payload) as { errorMessage?: unknown };
    return typeof parsed.errorMessage === 'string' ? parsed.errorMessage.slice(0, 2000) : undefined;
  } catch {
    return undefined;
  }
}
