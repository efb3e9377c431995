/**
 * Starts AWS's DynamoDB Local (the jar shipped in the `amplify-dynamodb-simulator`
 * npm package) in memory with the system Java, on loopback, and waits until it
 * answers `ListTables`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';

export interface DynamoDbLocal {
  readonly endpoint: string;
  stop(): Promise<void>;
}

export interface DynamoDbLocalOptions {
  /** 0 or absent: pick a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
}

const READY_TIMEOUT_MS = 30_000;
const POLL_INTERVAL_MS = 100;
const KILL_GRACE_MS = 2_000;
const STDERR_TAIL_CHARS = 2_000;
/** Attempts when we picked the port ourselves and someone else took it meanwhile. */
const PORT_ATTEMPTS = 3;

export function javaMissingMessage(): string {
  return 'Java is required for DynamoDB Local: install it with `sudo apt-get install -y default-jre-headless`';
}

/** Directory holding DynamoDBLocal.jar and DynamoDBLocal_lib. */
export function emulatorDir(): string {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve('amplify-dynamodb-simulator/package.json');
  return join(dirname(pkg), 'emulator');
}

/** Asks the OS for a free TCP port on `host` (listen on 0, read it, close). */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no free port found'))));
    });
  });
}

/** Resolves when the `java` launcher runs; rejects with javaMissingMessage() otherwise. */
function checkJava(): Promise<void> {
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = spawn('java', ['-version'], { stdio: 'ignore' });
    } catch {
      reject(new Error(javaMissingMessage()));
      return;
    }
    child.once('error', () => reject(new Error(javaMissingMessage())));
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(javaMissingMessage())),
    );
  });
}

export async function startDynamoDbLocal(
  options: DynamoDbLocalOptions = {},
): Promise<DynamoDbLocal> {
  const host = options.host ?? '127.0.0.1';
  const dir = emulatorDir();
  const jar = join(dir, 'DynamoDBLocal.jar');
  if (!existsSync(jar)) {
    throw new Error(
      `DynamoDB Local jar not found at ${jar} (is amplify-dynamodb-simulator installed?)`,
    );
  }
  await checkJava();

  const fixedPort = options.port !== undefined && options.port !== 0;
  let lastError: unknown;
  for (let attempt = 1; attempt <= (fixedPort ? 1 : PORT_ATTEMPTS); attempt++) {
    const port = fixedPort ? (options.port as number) : await freePort(host);
    try {
      return await launch(dir, host, port);
    } catch (error) {
      lastError = error;
      if (!(error instanceof PortInUseError)) throw error;
    }
  }
  throw lastError;
}

class PortInUseError extends Error {
  override name = 'PortInUseError';
}

async function launch(dir: string, host: string, port: number): Promise<DynamoDbLocal> {
  const child = spawn(
    'java',
    [
      // The client JIT only, and one GC thread: on a machine of two cores the
      // full JIT's compiler threads take CPU from the emulator's requests for
      // minutes. Measured on 1,000 GetItems (50 at a time): the emulator's CPU
      // per request halves once warm, and it warms in a third of the time.
      '-XX:TieredStopAtLevel=1',
      '-XX:+UseSerialGC',
      `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
      '-jar',
      join(dir, 'DynamoDBLocal.jar'),
      '-inMemory',
      // One database for every access key and region, so a table created by the
      // stack is visible to the admin CLI or tests whatever credentials they use.
      '-sharedDb',
      '-disableTelemetry',
      '-port',
      String(port),
    ],
    { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
  );

  // When its main thread dies (for example it cannot bind the port), DynamoDB
  // Local prints the exception but the JVM keeps running: watch stderr for it.
  let stderr = '';
  let onFatal: (() => void) | undefined;
  const fatal = new Promise<void>((resolve) => {
    onFatal = resolve;
  });
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_TAIL_CHARS);
    if (stderr.includes('Exception in thread "main"')) {
      // Let the rest of the stack trace arrive before reporting it.
      setTimeout(() => onFatal?.(), 200);
    }
  });

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));

  const killOnExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.on('exit', killOnExit);

  const stop = async (): Promise<void> => {
    process.off('exit', killOnExit);
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
    await exited;
    clearTimeout(timer);
  };

  // DynamoDB Local binds every interface; the endpoint we hand out is loopback.
  const endpoint = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const client = new DynamoDBClient({
    region: 'us-east-1',
    endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });

  type Outcome =
    | { kind: 'ready' }
    | { kind: 'exit'; code: number | null }
    | { kind: 'fatal' }
    | { kind: 'error'; error: Error };
  let settled = false;
  const early: Promise<Outcome> = Promise.race([
    exited.then(({ code }) => ({ kind: 'exit' as const, code })),
    spawnError.then((error) => ({ kind: 'error' as const, error })),
    fatal.then(() => ({ kind: 'fatal' as const })),
  ]);
  const ready = (async (): Promise<Outcome> => {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (!settled && Date.now() < deadline) {
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }), {
          abortSignal: AbortSignal.timeout(2_000),
        });
        return { kind: 'ready' };
      } catch {
        await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
      }
    }
    return {
      kind: 'error',
      error: new Error(`DynamoDB Local did not answer within ${READY_TIMEOUT_MS} ms`),
    };
  })();

  const outcome = await Promise.race([ready, early]);
  settled = true;
  client.destroy();

  if (outcome.kind === 'ready') {
    return { endpoint, stop };
  }
  await stop();
  if (outcome.kind === 'error') {
    if ((outcome.error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(javaMissingMessage());
    }
    throw outcome.error;
  }
  const tail = stderr.trim();
  if (/BindException|Address already in use|Failed to bind/i.test(tail)) {
    throw new PortInUseError(
      `DynamoDB Local could not listen on port ${port}: it is already in use`,
    );
  }
  const how = outcome.kind === 'exit' ? `exited with code ${outcome.code}` : 'failed';
  throw new Error(`DynamoDB Local ${how} before it was ready${tail ? `: ${tail}` : ''}`);
}
