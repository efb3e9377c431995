import { resolve } from 'node:path';
import { AssetStaging, type Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { LAMBDA_BUNDLE_ALIASES, LAMBDA_ESBUILD_TARGET } from '../lambda-bundling.js';

/** The repository root: entries, the lock file and esbuild are found from here. */
export const PROJECT_ROOT = resolve(import.meta.dirname, '../..');

/**
 * The newest Node.js runtime this aws-cdk-lib offers (the AWS SDK needs Node 22
 * or newer from January 2027). The bundle targets the same version
 * (LAMBDA_ESBUILD_TARGET).
 */
export const RUNTIME = lambda.Runtime.NODEJS_24_X;

export interface TokenVendingFunctionProps {
  /** `token-vending-<stage>-<name>`: stable names for IAM policies, the console and test events. */
  readonly stage: string;
  /** Also the Powertools `service` the function reports metrics under. */
  readonly name: 'vend-token' | 'refresh' | 'issue-keys' | 'admin' | 'policy-validator';
  readonly description: string;
  readonly timeout: Duration;
  readonly memorySize: number;
  /** Default: none (the account's unreserved pool). */
  readonly reservedConcurrentExecutions?: number | undefined;
  readonly logRetention: logs.RetentionDays;
  /** Variables that need no grant; constructs that grant add theirs with `addEnvironment`. */
  readonly environment?: Record<string, string>;
  /** Provisioned concurrency of the `live` alias. Default: none (cold starts on demand). */
  readonly provisionedConcurrency?: number | undefined;
  /** Destroy the log group with the stack (a throwaway stage). Default: keep it. */
  readonly destroyLogsWithStack?: boolean;
}

/** The alias every caller, schedule and admin invocation targets. */
export const LIVE_ALIAS = 'live';

/**
 * One of the four functions, built the same way: `functions/<name>/handler.ts`
 * bundled by the local esbuild as minified ESM with source maps and the AWS SDK
 * inside (the pinned, tested versions, not the runtime's; its credential chain
 * cut to Lambda's, see infra/lambda-bundling.ts), on ARM64, with its
 * own role (no managed policies: only what the constructs grant) and its own
 * log group with a retention. Each deploy publishes a version and points the
 * `live` alias at it; everything that invokes the function invokes `live`, so
 * a release can shift traffic gradually and roll back (see releases.ts).
 */
export class TokenVendingFunction extends Construct {
  readonly function: NodejsFunction;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;
  /** The literal name, usable where a token is not (schema names, docs). */
  readonly functionName: string;
  /** The `live` alias: what the URL, the schedules and admin invoke. */
  readonly live: lambda.Alias;
  /** `<functionName>:live`, usable where a token is not. */
  readonly liveName: string;

  constructor(scope: Construct, id: string, props: TokenVendingFunctionProps) {
    super(scope, id);
    this.functionName = `token-vending-${props.stage}-${props.name}`;

    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `${this.functionName}: only what this function uses`,
    });
    // Kept when the stack is deleted: the vend audit lines are the trail of
    // who got which token (a throwaway stage destroys them).
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: props.destroyLogsWithStack ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
    });
    // The group exists, so the role needs no logs:CreateLogGroup.
    this.logGroup.grantWrite(this.role);

    this.function = new NodejsFunction(this, 'Function', {
      functionName: this.functionName,
      description: props.description,
      entry: resolve(PROJECT_ROOT, 'functions', props.name, 'handler.ts'),
      handler: 'handler',
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: resolve(PROJECT_ROOT, 'package-lock.json'),
      runtime: RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      timeout: props.timeout,
      memorySize: props.memorySize,
      role: this.role,
      logGroup: this.logGroup,
      ...(props.reservedConcurrentExecutions === undefined
        ? {}
        : { reservedConcurrentExecutions: props.reservedConcurrentExecutions }),
      // No NODE_OPTIONS=--enable-source-maps: it decodes the source map at
      // every cold start (7 to 9 ms of vend's). The functions' logger maps a
      // logged error's stack instead (functions/adapters/source-mapped-stack.ts).
      environment: props.environment,
      bundling: {
        format: OutputFormat.ESM,
        target: LAMBDA_ESBUILD_TARGET,
        // The packages' ES module builds first, so unused SDK code shakes out.
        mainFields: ['module', 'main'],
        minify: true,
        sourceMap: true,
        // Maps without the sources: stack traces need only names and lines.
        sourcesContent: false,
        // Bundle the AWS SDK too: the versions the tests ran with, not the runtime's.
        externalModules: [],
        esbuildArgs: {
          '--alias': Object.entries(LAMBDA_BUNDLE_ALIASES).map(([from, to]) => `${from}=${to}`),
        },
        // esbuild resolves the aliases' relative paths from its working
        // directory: the project root when bundling locally, and, should CDK
        // fall back to Docker (no local esbuild), where it mounts the root.
        workingDirectory: AssetStaging.BUNDLING_INPUT_DIR,
        // No `createRequire` banner: the bundles hold no CommonJS `require`
        // (test/infra/bundles.test.ts loads each one as ESM to prove it).
      },
    });
    this.liveName = `${this.functionName}:${LIVE_ALIAS}`;
    this.live = new lambda.Alias(this, 'Live', {
      aliasName: LIVE_ALIAS,
      version: this.function.currentVersion,
      description: 'What callers, schedules and admin invoke; releases shift it',
      ...(props.provisionedConcurrency === undefined
        ? {}
        : { provisionedConcurrentExecutions: props.provisionedConcurrency }),
    });
  }

  /** Adds an environment variable; constructs call it next to the grant the variable needs. */
  addEnvironment(name: string, value: string): void {
    this.function.addEnvironment(name, value);
  }
}
