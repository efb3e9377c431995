import { CliError, UsageError } from './cli-error.js';
import { loadStack } from './cli-target.js';
import { runProjectScript } from './project-script.js';
import { STACK_FILE } from './stack-file.js';

/** An admin event (docs/operations.md): a JSON object with an `action`. */
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
 * `function_error`; an SDK failure a CliError `invoke_failed`; no Lambda
 * client installed a CliError `not_available`.
 */
export async function invokeAdminFunction(options: InvokeAdminOptions): Promise<string> {
  const { InvokeCommand, LambdaClient } = await loadLambdaClient();
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

/**
 * `@aws-sdk/client-lambda`, an optional peer dependency of the package: only
 * `tvm admin --function` needs it, so services that install the library do not
 * carry it. Loaded here so that `tvm token` never pays for it. Missing, it is a
 * CliError `not_available` that says what to install.
 */
async function loadLambdaClient(): Promise<typeof import('@aws-sdk/client-lambda')> {
  try {
    return await import('@aws-sdk/client-lambda');
  } catch (error) {
    // Only the package itself missing; a broken install of it fails as it is.
    const missing =
      (error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' &&
      String((error as Error).message).startsWith("Cannot find package '@aws-sdk/client-lambda'");
    if (!missing) throw error;
    throw new CliError(
      'not_available',
      'tvm admin --function needs @aws-sdk/client-lambda: install it next to the package tvm came with ' +
        '(npm install @aws-sdk/client-lambda)',
      1,
      { cause: error },
    );
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

export interface LocalAdminOptions {
  /** The project directory: where `npm start` runs and wrote `.local/stack.json`. */
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly event: AdminEvent;
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

/**
 * Runs an admin event against the local stack the way an operator would:
 * `npm run --silent admin -- '<event json>'` in the project directory, with
 * this environment. Its stdout and stderr are passed through; resolves to its
 * exit code (0 ok, 1 error, 2 usage).
 */
export function runLocalAdmin(options: LocalAdminOptions): Promise<number> {
  return runProjectScript({
    ...options,
    script: 'admin',
    args: [JSON.stringify(options.event)],
    hint: 'run tvm admin in the token vending project directory (where npm start runs), or pass --function NAME',
  });
}

/** JSON payloads pretty-printed; anything else as it came. */
export function formatPayload(payload: string): string {
  try {
    return `${JSON.stringify(JSON.parse(payload), null, 2)}\n`;
  } catch {
    return payload === '' || payload.endsWith('\n') ? payload : `${payload}\n`;
  }
}

/** Throws the usage error of `command` unless `npm start` runs in `cwd`, the local admin's target. */
export async function requireLocalStack(cwd: string, command: string): Promise<void> {
  if (!(await loadStack(cwd))) {
    throw new UsageError(
      `no admin target: pass --function NAME, or start the local stack (npm start) so that ./${STACK_FILE} exists`,
      command,
    );
  }
}
