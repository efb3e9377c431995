import { CliError } from './cli-error.js';
import type { LocalStackFile } from './stack-file.js';

/** An admin event (SPEC section 7): a JSON object with an `action`. */
export type AdminEvent = Record<string, unknown> & { action: string };

export interface InvokeAdminOptions {
  readonly functionName: string;
  readonly event: AdminEvent;
  /** Default: the AWS SDK's own resolution (`AWS_REGION`, profile). */
  readonly region?: string;
}

/**
 * Runs an admin event through Lambda Invoke (RequestResponse) and returns the
 * function's result payload as text. A function error becomes a CliError
 * `function_error`; an SDK failure a CliError `invoke_failed`.
 */
export async function invokeAdminFunction(options: InvokeAdminOptions): Promise<string> {
  // Loaded here so that `tvm token` never pays for the Lambda client.
  const { InvokeCommand, LambdaClient } = await import('@aws-sdk/client-lambda');
  const client = new LambdaClient(options.region ? { region: options.region } : {});
  try {
    const output = await client.send(
      new InvokeCommand({
        FunctionName: options.functionName,
        InvocationType: 'RequestResponse',
        Payload: new TextEncoder().encode(JSON.stringify(options.event)),
      }),
    );
    const payload = output.Payload ? new TextDecoder().decode(output.Payload) : '';
    if (output.FunctionError) {
      throw new CliError('function_error', describeFunctionError(output.FunctionError, payload));
    }
    return payload;
  } catch (error) {
    if (error instanceof CliError) throw error;
    const name = error instanceof Error ? error.name : 'Error';
    const message = error instanceof Error ? error.message : String(error);
    throw new CliError('invoke_failed', `${name}: ${message}`, 1, { cause: error });
  } finally {
    client.destroy();
  }
}

/** `errorType: errorMessage` from Lambda's error payload, or the FunctionError kind. */
function describeFunctionError(kind: string, payload: string): string {
  try {
    const parsed = JSON.parse(payload) as { errorType?: unknown; errorMessage?: unknown };
    const type = typeof parsed.errorType === 'string' ? parsed.errorType : kind;
    if (typeof parsed.errorMessage === 'string') {
      const message =
        parsed.errorMessage.length > 300
          ? `${parsed.errorMessage.slice(0, 299)}…`
          : parsed.errorMessage;
      return `${type}: ${message}`;
    }
    return type;
  } catch {
    return kind;
  }
}

/** Runs an admin event against the local stack (SPEC section 8). */
export async function runLocalAdmin(_stack: LocalStackFile, _event: AdminEvent): Promise<string> {
  throw new CliError(
    'not_available',
    'the local stack has no admin function yet (it comes with a later issue); ' +
      'use --function NAME to invoke one in AWS',
  );
}
