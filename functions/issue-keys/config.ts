/**
 * The job's settings from the environment, read through EnvReader so every
 * problem is reported at once. Shared by the Lambda handler and any local or
 * admin wiring; where the keys are stored is the wiring's own choice.
 */
import type { EnvReader } from '../core/config.js';
import { BUSINESS_APPLICATION_ID_PATTERN } from './business-application-id.js';

export interface KeyIssuingSettings {
  /** `PROVIDER_BASE_URL`. */
  readonly providerBaseUrl: string;
  /** `VEND_URL`: the vend Function URL the unscoped token comes from. */
  readonly vendUrl: string;
  /** `KEY_ISSUE_BUSINESS_APPLICATION_IDS`: the ids a scheduled run issues keys for. */
  readonly businessApplicationIds: readonly string[];
  /** `KEY_ISSUE_REQUEST_BODY`: JSON text sent as the request body; absent: no body. */
  readonly requestBody?: string;
}

/**
 * `KEY_ISSUE_BUSINESS_APPLICATION_IDS`: a JSON array of strings (`["ba_1","ba_2"]`) or
 * a comma-separated list (`ba_1, ba_2`); blank entries are ignored, duplicates dropped.
 */
export function parseBusinessApplicationIds(
  raw: string,
  name = 'KEY_ISSUE_BUSINESS_APPLICATION_IDS',
): { ids: string[]; problems: string[] } {
  const trimmed = raw.trim();
  if (trimmed === '') return { ids: [], problems: [] };
  let entries: unknown[];
  if (trimmed.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (!Array.isArray(parsed)) return { ids: [], problems: [`${name} must be a JSON array`] };
      entries = parsed;
    } catch {
      return { ids: [], problems: [`${name} is not valid JSON`] };
    }
  } else {
    entries = trimmed
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  }
  const problems: string[] = [];
  const ids: string[] = [];
  entries.forEach((entry, index) => {
    if (typeof entry !== 'string' || !BUSINESS_APPLICATION_ID_PATTERN.test(entry)) {
      problems.push(
        `${name} entry ${index + 1} must be a string matching ${BUSINESS_APPLICATION_ID_PATTERN.source}`,
      );
    } else if (!ids.includes(entry)) {
      ids.push(entry);
    }
  });
  return { ids, problems };
}

/** Reads the job's settings; call `reader.done()` after reading the wiring's own variables. */
export function readKeyIssuingSettings(reader: EnvReader): KeyIssuingSettings {
  // Both carry bearer tokens: https, or http on a loopback host only.
  const providerBaseUrl = reader.secureUrl('PROVIDER_BASE_URL');
  const vendUrl = reader.secureUrl('VEND_URL');
  const { ids, problems } = parseBusinessApplicationIds(
    reader.optional('KEY_ISSUE_BUSINESS_APPLICATION_IDS', ''),
  );
  for (const problem of problems) reader.problem(problem);
  const body = reader.optional('KEY_ISSUE_REQUEST_BODY', '');
  let requestBody: string | undefined;
  if (body.trim() !== '') {
    try {
      const parsed: unknown = JSON.parse(body);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
        reader.problem('KEY_ISSUE_REQUEST_BODY must be a JSON object');
      } else {
        requestBody = body;
      }
    } catch {
      reader.problem('KEY_ISSUE_REQUEST_BODY is not valid JSON');
    }
  }
  return {
    providerBaseUrl,
    vendUrl,
    businessApplicationIds: ids,
    ...(requestBody === undefined ? {} : { requestBody }),
  };
}
