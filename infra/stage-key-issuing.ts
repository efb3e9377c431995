/**
 * The stage's key-issuing fields: when the job runs, what it sends, which ids
 * it starts with, and which roles may read the keys it stores.
 */
import { BUSINESS_APPLICATION_ID_PATTERN } from '../functions/issue-keys/business-application-id.js';

/** What a stage file writes about key issuing (StageInput's `keyIssuing`). */
export interface KeyIssuingInput {
  /** The ids a scheduled run issues keys for at first (may be empty); the policy document carries them after. */
  readonly businessApplicationIds: readonly string[];
  /** EventBridge Scheduler expression in UTC: `rate(1 day)`, `cron(0 3 * * ? *)`. */
  readonly schedule: string;
  /** JSON object sent as the keys request body; default: no body. */
  readonly requestBody?: Record<string, unknown>;
  /**
   * Roles of the stack's account that read the keys of named business
   * applications (their services make Payments API calls on the merchants'
   * behalf): each gets `GetSecretValue` and `DescribeSecret` on
   * `<secretsPrefix>/basic-auth/<id>` of those ids only. Default: none.
   */
  readonly readers?: ReadonlyArray<{
    readonly role: string;
    readonly businessApplicationIds: readonly string[];
  }>;
}

/** The checked key-issuing fields. */
export interface KeyIssuing {
  readonly businessApplicationIds: readonly string[];
  readonly schedule: string;
  /** JSON text. */
  readonly requestBody?: string;
  readonly readers: ReadonlyArray<{
    readonly role: string;
    readonly businessApplicationIds: readonly string[];
  }>;
}

const FIELDS = new Set(['businessApplicationIds', 'schedule', 'requestBody', 'readers']);
/** Scheduler's three forms (`rate(1 day)` but `rate(2 days)`); the service checks cron fields at deploy. */
const SCHEDULE_PATTERN =
  /^(?:rate\((?:1 (?:minute|hour|day)|(?:[2-9]|[1-9]\d+) (?:minutes|hours|days))\)|cron\((?:\S+ ){5}\S+\)|at\(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\))$/;
const ROLE_ARN_PATTERN =
  /^arn:aws(?:-cn|-us-gov|-iso(?:-[a-z])?)?:iam::(\d{12}):role\/(?:[\w+=,.@-]+\/)*[\w+=,.@-]{1,64}$/;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Problems of a list of ids at `path`: each must match the pattern, none repeated. */
function idProblems(ids: unknown, path: string, problems: string[]): ids is string[] {
  if (!Array.isArray(ids)) {
    problems.push(`${path} must be an array of ids (may be empty)`);
    return false;
  }
  const before = problems.length;
  ids.forEach((id: unknown, index) => {
    if (typeof id !== 'string' || !BUSINESS_APPLICATION_ID_PATTERN.test(id)) {
      problems.push(`${path}[${index}] must match ${BUSINESS_APPLICATION_ID_PATTERN.source}`);
    } else if (ids.indexOf(id) !== index) {
      problems.push(`${path}[${index}] repeats "${id}"`);
    }
  });
  return problems.length === before;
}

function checkReaders(
  raw: unknown,
  stackAccount: string | undefined,
  problems: string[],
): KeyIssuing['readers'] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) {
    problems.push('keyIssuing.readers must be an array of { role, businessApplicationIds }');
    return [];
  }
  const readers: Array<KeyIssuing['readers'][number]> = [];
  raw.forEach((reader: unknown, index) => {
    const path = `keyIssuing.readers[${index}]`;
    if (!isRecord(reader)) {
      problems.push(`${path} must be an object { role, businessApplicationIds }`);
      return;
    }
    const role = typeof reader.role === 'string' ? ROLE_ARN_PATTERN.exec(reader.role) : null;
    if (!role) problems.push(`${path}.role must be an IAM role ARN`);
    // The stack attaches a policy to the role: only a role of its own account.
    else if (stackAccount !== undefined && role[1] !== stackAccount) {
      problems.push(`${path}.role must be a role of the stage's account ${stackAccount}`);
    }
    const ids = reader.businessApplicationIds;
    if (idProblems(ids, `${path}.businessApplicationIds`, problems) && role) {
      readers.push({ role: reader.role as string, businessApplicationIds: [...ids] });
    }
  });
  return readers;
}

/** Checks a stage's `keyIssuing`; undefined (with problems) when it is unusable. */
export function checkKeyIssuing(
  raw: unknown,
  stackAccount: string | undefined,
  problems: string[],
): KeyIssuing | undefined {
  if (raw === undefined) {
    problems.push('keyIssuing is required ({ businessApplicationIds, schedule })');
    return undefined;
  }
  if (!isRecord(raw)) {
    problems.push('keyIssuing must be an object');
    return undefined;
  }
  const before = problems.length;
  for (const key of Object.keys(raw)) {
    if (!FIELDS.has(key)) problems.push(`keyIssuing: unknown field "${key.slice(0, 60)}"`);
  }
  const ids = raw.businessApplicationIds;
  idProblems(ids, 'keyIssuing.businessApplicationIds', problems);
  const schedule = raw.schedule;
  if (typeof schedule !== 'string' || !SCHEDULE_PATTERN.test(schedule)) {
    problems.push(
      'keyIssuing.schedule must be an EventBridge Scheduler expression: rate(<n> <minutes|hours|days>), cron(<6 fields>) or at(yyyy-mm-ddThh:mm:ss)',
    );
  }
  const body = raw.requestBody;
  if (body !== undefined && !isRecord(body)) {
    problems.push('keyIssuing.requestBody must be a JSON object');
  }
  const readers = checkReaders(raw.readers, stackAccount, problems);
  if (problems.length > before) return undefined;
  return {
    businessApplicationIds: [...(ids as string[])],
    schedule: schedule as string,
    ...(body === undefined ? {} : { requestBody: JSON.stringify(body) }),
    readers,
  };
}
