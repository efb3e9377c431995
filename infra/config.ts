/**
 * The typed stage configuration: what one deployment (`-c stage=<name>`) needs.
 * Stage files (`infra/stages/*.ts`) write a `StageInput`; `validateStage` checks
 * it once, before any construct is made, and reports every problem together in
 * one StageConfigError, naming each field.
 */
import { secretsPrefixProblem } from '../functions/adapters/secrets-manager-key-vault.js';
import { AccessPolicy, type AccessPolicyDocument } from '../functions/core/access-policy.js';
import { PARTITION } from '../functions/core/access-policy-schema.js';
import { APPCONFIG_MIN_POLL_SECONDS } from '../functions/core/config.js';
import {
  ACCESS_FIELDS,
  checkAccess,
  type StageAccess,
  type StageAccessInput,
} from './stage-access.js';
import { checkKeyIssuing, type KeyIssuing, type KeyIssuingInput } from './stage-key-issuing.js';
import {
  checkRelease,
  RELEASE_FIELDS,
  type StageRelease,
  type StageReleaseInput,
} from './stage-release.js';

/**
 * Reserved concurrency per function. Lambda keeps 100 of the account's
 * concurrency unreserved, so every reservation needs an account quota above
 * 100 plus the reservations; new accounts may start at 10 or 50
 * (`aws lambda get-account-settings` shows it). Each is off unless set.
 */
export interface ReservedConcurrency {
  /** Caps the instances that can call the provider at once when DynamoDB is unavailable. */
  readonly vend?: number;
  /** 2 keeps a scheduled run and one forced refresh at a time. */
  readonly refresh?: number;
  /** 1 keeps a manual run and the schedule from both calling the provider. */
  readonly issueKeys?: number;
}

/** What a stage file writes. Every field is checked by `validateStage`. */
export interface StageInput extends StageAccessInput, StageReleaseInput {
  /** Names the stack (`TokenVending-<stage>`) and the functions (`token-vending-<stage>-*`). */
  readonly stage: string;
  /** Pin the stack to an account and region; default: the CLI's credentials and region. */
  readonly account?: string;
  readonly region?: string;
  /** The payments provider's base URL; https only (tokens and the secret go there). */
  readonly providerBaseUrl: string;
  /**
   * The Secrets Manager secret holding `{"key","secret"}`: its complete ARN
   * (ending in the six-character suffix Secrets Manager adds) or its name. The
   * stack never creates it, so the provider secret never passes through CloudFormation.
   */
  readonly credentialsSecret: string;
  /**
   * The access policy's first version (docs/configuration.md). The stack deploys it to
   * AppConfig with the key-issuing ids; later versions are deployed through
   * AppConfig, without a deploy of the stack. The issue-keys function's role
   * is always granted `unscoped` besides.
   */
  readonly accessPolicy: AccessPolicyDocument;
  /** A fetched access policy is used at most this many seconds (15..3600: AppConfig polls). Default 60. */
  readonly policyMaxAgeSeconds?: number;
  readonly keyIssuing: KeyIssuingInput;
  /** How the unscoped token is requested: `scope` left out, or sent empty. Default `omit`. */
  readonly unscopedScopeMode?: 'omit' | 'empty';
  /** Subscribed to the alarm topic when given (the address must confirm the subscription). */
  readonly alarmEmail?: string;
  /** Issued keys are stored as `<secretsPrefix>/basic-auth/<id>`. */
  readonly secretsPrefix: string;
  /** Reserved concurrency per function. Default: none (the account's unreserved pool). */
  readonly reservedConcurrency?: ReservedConcurrency;
  /** Days the functions' logs are kept. Default 365 (the vend audit trail). */
  readonly logRetentionDays?: number;
  /**
   * CloudFormation termination protection: `cdk destroy` and stack deletion
   * are refused until it is turned off. Default true (false for a `throwaway` stage).
   */
  readonly terminationProtection?: boolean;
}

/** A checked stage: what the constructs receive. */
export interface StageConfig extends StageRelease {
  readonly stage: string;
  readonly account?: string;
  readonly region?: string;
  readonly providerBaseUrl: string;
  readonly credentialsSecret:
    | { readonly kind: 'arn'; readonly arn: string }
    | { readonly kind: 'name'; readonly name: string };
  /** The document as written; the stack adds the issue-keys grant to it. */
  readonly accessPolicy: AccessPolicyDocument;
  /** The parsed policy: its principals get the URL permissions. */
  readonly policy: AccessPolicy;
  readonly keyIssuing: KeyIssuing;
  readonly unscopedScopeMode: 'omit' | 'empty';
  readonly alarmEmail?: string;
  readonly secretsPrefix: string;
  readonly reservedConcurrency: ReservedConcurrency;
  readonly policyMaxAgeSeconds: number;
  readonly logRetentionDays: number;
  readonly terminationProtection: boolean;
  readonly access: StageAccess;
}

/**
 * What the person running synth gave wrong (the stage, a context value):
 * `infra/app.ts` prints its message alone, without a stack trace.
 */
export class SynthInputError extends Error {
  override name = 'SynthInputError';
}

/** A stage configuration that cannot be deployed; the message lists every problem. */
export class StageConfigError extends SynthInputError {
  override name = 'StageConfigError';
  readonly problems: readonly string[];
  constructor(source: string, problems: readonly string[]) {
    super(`Invalid stage configuration ${source}:\n  - ${problems.join('\n  - ')}`);
    this.problems = problems;
  }
}

const FIELDS = new Set<string>([
  'stage',
  'account',
  'region',
  'providerBaseUrl',
  'credentialsSecret',
  'accessPolicy',
  'keyIssuing',
  'unscopedScopeMode',
  'alarmEmail',
  'secretsPrefix',
  'reservedConcurrency',
  'policyMaxAgeSeconds',
  'logRetentionDays',
  'terminationProtection',
  ...ACCESS_FIELDS,
  ...RELEASE_FIELDS,
]);
const CONCURRENCY_FIELDS = ['vend', 'refresh', 'issueKeys'] as const;

/** Short enough that `token-vending-<stage>-issue-keys` fits Lambda's 64-character names. */
const STAGE_PATTERN = /^[a-z][a-z0-9-]{0,19}$/;
const ACCOUNT_PATTERN = /^\d{12}$/;
const REGION_PATTERN = /^[a-z]{2}(?:-[a-z]+)+-\d$/;
/** A complete secret ARN: the name, a hyphen and the six characters Secrets Manager adds. */
const SECRET_ARN_PATTERN = new RegExp(
  `^arn:${PARTITION}:secretsmanager:[a-z]{2}(?:-[a-z]+)+-\\d:\\d{12}:secret:[A-Za-z0-9/_+=.@-]+-[A-Za-z0-9]{6}$`,
);
const SECRET_NAME_PATTERN = /^[A-Za-z0-9/_+=.@-]{1,512}$/;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** The retention periods CloudWatch Logs accepts. */
export const LOG_RETENTION_DAYS = [
  1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288,
  3653,
] as const;
/**
 * The first policy version travels inside the CloudFormation template, which
 * CloudFormation takes up to 1 MB from S3 (CloudFormation quotas), and AppConfig
 * hosts up to 1 MB per version: half of it leaves the template room.
 */
const MAX_ACCESS_POLICY_BYTES = 500_000;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Checks a stage file's configuration once; every problem is reported together.
 * @throws StageConfigError naming each field that is missing or wrong
 */
export function validateStage(input: unknown, source = '(stage)'): StageConfig {
  const problems: string[] = [];
  if (!isRecord(input)) throw new StageConfigError(source, ['the stage must be an object']);
  for (const key of Object.keys(input)) {
    if (!FIELDS.has(key)) problems.push(`unknown field "${key.slice(0, 60)}"`);
  }
  const text = (name: string): string | undefined => {
    const value = input[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string') {
      problems.push(`${name} must be a string`);
      return undefined;
    }
    return value;
  };
  const required = (name: string): string => {
    const value = text(name);
    if (value === undefined || value.trim() === '') {
      if (input[name] === undefined || typeof input[name] === 'string') {
        problems.push(`${name} is required`);
      }
      return '';
    }
    return value;
  };

  const stage = required('stage');
  if (stage !== '' && !STAGE_PATTERN.test(stage)) {
    problems.push(`stage must match ${STAGE_PATTERN.source} (it names the stack and functions)`);
  }
  const account = text('account');
  if (account !== undefined && !ACCOUNT_PATTERN.test(account)) {
    problems.push('account must be a 12-digit AWS account id');
  }
  const region = text('region');
  if (region !== undefined && !REGION_PATTERN.test(region)) {
    problems.push('region must be an AWS region name such as eu-west-1');
  }

  const providerBaseUrl = required('providerBaseUrl');
  if (providerBaseUrl !== '') {
    const url = URL.canParse(providerBaseUrl) ? new URL(providerBaseUrl) : undefined;
    if (url === undefined) problems.push('providerBaseUrl must be a URL');
    else if (url.protocol !== 'https:') {
      problems.push('providerBaseUrl must be an https: URL (the key, secret and tokens go there)');
    } else if (url.username !== '' || url.password !== '') {
      // It would sit in the template and the function's environment, and fetch refuses it.
      problems.push('providerBaseUrl must not contain a user name or password');
    }
  }

  const secret = required('credentialsSecret');
  let credentialsSecret: StageConfig['credentialsSecret'] = { kind: 'name', name: secret };
  if (secret.startsWith('arn:')) {
    if (SECRET_ARN_PATTERN.test(secret)) credentialsSecret = { kind: 'arn', arn: secret };
    else {
      problems.push(
        'credentialsSecret must be the complete secret ARN (ending in "-" and the six characters Secrets Manager adds) or the secret name',
      );
    }
  } else if (secret !== '' && !SECRET_NAME_PATTERN.test(secret)) {
    problems.push('credentialsSecret must be a secret name of A-Z a-z 0-9 / _ + = . @ - or an ARN');
  }

  let policy: AccessPolicy | undefined;
  const accessPolicy = input.accessPolicy;
  if (accessPolicy === undefined) problems.push('accessPolicy is required');
  else {
    const json = JSON.stringify(accessPolicy);
    try {
      policy = AccessPolicy.parse(json, 'accessPolicy');
    } catch (error) {
      problems.push(error instanceof Error ? error.message : String(error));
    }
    if (json.length > MAX_ACCESS_POLICY_BYTES) {
      problems.push(
        `accessPolicy is ${json.length} bytes as JSON; the stack deploys at most ${MAX_ACCESS_POLICY_BYTES} as the first version (deploy larger ones through AppConfig, up to 1 MB)`,
      );
    }
  }

  const keyIssuing = checkKeyIssuing(input.keyIssuing, account, problems);

  const mode = input.unscopedScopeMode ?? 'omit';
  if (mode !== 'omit' && mode !== 'empty') problems.push('unscopedScopeMode must be omit or empty');

  const alarmEmail = text('alarmEmail');
  if (alarmEmail !== undefined && !EMAIL_PATTERN.test(alarmEmail)) {
    problems.push('alarmEmail must be an e-mail address');
  }

  const secretsPrefix = required('secretsPrefix');
  const prefixProblem = secretsPrefix === '' ? undefined : secretsPrefixProblem(secretsPrefix);
  if (prefixProblem) problems.push(`secretsPrefix: ${prefixProblem}`);
  // The issue-keys role may write every secret under <prefix>/basic-auth/: a
  // credentials secret there could be overwritten by a run for a matching id.
  const secretName =
    credentialsSecret.kind === 'name'
      ? secret
      : (/:secret:(.+)-[A-Za-z0-9]{6}$/.exec(secret)?.[1] ?? '');
  if (secretsPrefix !== '' && secretName.startsWith(`${secretsPrefix}/basic-auth/`)) {
    problems.push(
      `credentialsSecret must not be under ${secretsPrefix}/basic-auth/, where the key-issuing job writes (and may overwrite) secrets`,
    );
  }

  const reservedConcurrency = checkReservedConcurrency(input.reservedConcurrency, problems);
  const maxAge = input.policyMaxAgeSeconds ?? 60;
  const minAge = APPCONFIG_MIN_POLL_SECONDS;
  if (typeof maxAge !== 'number' || !Number.isInteger(maxAge) || maxAge < minAge || maxAge > 3600) {
    problems.push(
      `policyMaxAgeSeconds must be an integer from ${minAge} to 3600 (AppConfig refuses polls closer together than ${minAge} s)`,
    );
  }
  const access = checkAccess(input, policy, account, problems);

  const retention = input.logRetentionDays ?? 365;
  if (!(LOG_RETENTION_DAYS as readonly unknown[]).includes(retention)) {
    problems.push(`logRetentionDays must be one of ${LOG_RETENTION_DAYS.join(', ')}`);
  }

  const release = checkRelease(input, problems);
  // Provisioned concurrency counts towards the function's reserved concurrency
  // ("Configuring provisioned concurrency", AWS Lambda Developer Guide): Lambda
  // refuses more at deploy time, after the stack has started updating.
  const provisioned = release.provisionedConcurrency;
  if (provisioned !== undefined && reservedConcurrency.vend !== undefined) {
    if (provisioned > reservedConcurrency.vend) {
      problems.push(
        `provisionedConcurrency (${provisioned}) must not exceed reservedConcurrency.vend (${reservedConcurrency.vend}): provisioned instances count towards the reservation`,
      );
    }
  }
  // A throwaway stage is meant to be deleted: unprotected unless it says otherwise (refused).
  const terminationProtection = input.terminationProtection ?? !release.throwaway;
  if (typeof terminationProtection !== 'boolean') {
    problems.push('terminationProtection must be true or false');
  }

  if (problems.length > 0 || policy === undefined || keyIssuing === undefined) {
    throw new StageConfigError(source, problems);
  }
  return {
    stage,
    ...(account === undefined ? {} : { account }),
    ...(region === undefined ? {} : { region }),
    providerBaseUrl,
    credentialsSecret,
    accessPolicy: accessPolicy as AccessPolicyDocument,
    policy,
    keyIssuing,
    unscopedScopeMode: mode as 'omit' | 'empty',
    ...(alarmEmail === undefined ? {} : { alarmEmail }),
    secretsPrefix,
    reservedConcurrency,
    policyMaxAgeSeconds: maxAge as number,
    logRetentionDays: retention as number,
    terminationProtection: terminationProtection as boolean,
    access,
    ...release,
  };
}

function checkReservedConcurrency(raw: unknown, problems: string[]): ReservedConcurrency {
  if (raw === undefined) return {};
  if (!isRecord(raw)) {
    problems.push('reservedConcurrency must be an object: { vend?, refresh?, issueKeys? }');
    return {};
  }
  const checked: Record<string, number> = {};
  for (const key of Object.keys(raw)) {
    if (!(CONCURRENCY_FIELDS as readonly string[]).includes(key)) {
      problems.push(`reservedConcurrency: unknown field "${key.slice(0, 60)}"`);
    }
  }
  for (const name of CONCURRENCY_FIELDS) {
    const value = raw[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1000) {
      problems.push(`reservedConcurrency.${name} must be an integer from 1 to 1000`);
    } else checked[name] = value;
  }
  return checked;
}

/**
 * The stage named on the command line (`-c stage=<name>`), checked.
 * @throws StageConfigError for an unknown name or an invalid stage
 */
export function selectStage(
  stages: Readonly<Record<string, StageInput>>,
  name: unknown,
  fallback: string,
): StageConfig {
  const chosen = name === undefined ? fallback : name;
  if (typeof chosen !== 'string' || !Object.hasOwn(stages, chosen)) {
    throw new StageConfigError(`"${String(chosen).slice(0, 40)}"`, [
      `no such stage; known stages: ${Object.keys(stages).join(', ')} (add one in infra/stages/)`,
    ]);
  }
  const input = stages[chosen] as StageInput;
  const config = validateStage(input, `"${chosen}"`);
  if (config.stage !== chosen) {
    throw new StageConfigError(`"${chosen}"`, [
      `its stage field is "${config.stage}"; register it under that name`,
    ]);
  }
  return config;
}
