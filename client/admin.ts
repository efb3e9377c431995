import { CliError, UsageError } from './cli-error.js';
import { loadStack } from './cli-target.js';
import { runProjectScript } from './project-script.js';
import { STACK_FILE } from './stack-file.js';

/**
 * An admin event (docs/operations.md): a JSON object with an `action`, or the
 * short form `{"all":true}` (invalidate everything), which has none.
 */
export type AdminEvent = Record<string, unknown> & { action?: string };

/**
 * The alias a deploy releases each function to (CodeDeploy moves it; a
 * rollback moves it back), so `$LATEST` can differ from what runs.
 */
export const LIVE_ALIAS = 'live';

export interface InvokeAdminOptions {
  /** A name or ARN; with a qualifier (`name:3`, `name:$LATEST`) that one is invoked. */
  readonly functionName: string;
  readonly event: AdminEvent;
  /** Default: the AWS SDK's own resolution (`AWS_REGION`, profile). */
  readonly region?: string;
  /** The version or alias to invoke. Default: `live`, unless `functionName` names one. */
  readonly qualifier?: string;
}

/**
 * The version or alias a function name or ARN names, if any: `name:q`,
 * `123456789012:function:name:q`, `arn:aws:lambda:...:function:name:q` (the
 * FunctionName formats of Lambda Invoke).
 */
export function qualifierOf(functionName: string): string | undefined {
  const parts = functionName.split(':');
  const at = parts.indexOf('function');
  const name = at === -1 ? parts : parts.slice(at + 1);
  return name.length > 1 ? name.at(-1) : undefined;
}

/**
 * Runs an admin event through Lambda Invoke (RequestResponse) on the `live`
 * alias (or the qualifier given) and returns the function's result payload as
 * text. A function error becomes a CliError
 * `function_error`; an SDK failure a CliError `invoke_failed`; no Lambda
 * client installed a CliError `not_available`.
 */
export async function invokeAdminFunction(options: InvokeAdminOptions): Promise<string> {
  const { InvokeCommand, LambdaClient } = await loadLambdaClient();
  const client = new LambdaClient(options.region ? { region: options.region } : {});
  // Lambda refuses a Qualifier that differs from one in the name ("The derived
  // qualifier from the function name does not match the specified
  // qualifier"), so a qualified name goes as it is.
  const qualifier =
    options.qualifier ?? (qualifierOf(options.functionName) === undefined ? LIVE_ALIAS : undefined);
  try {
    const output = await client.send(
      new InvokeCommand({
        FunctionName: options.functionName,
        ...(qualifier === undefined ? {} : { Qualifier: qualifier }),
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
