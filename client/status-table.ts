/**
 * The admin `status` answer as tables people read: times in ISO 8601 (UTC, to
 * the second) instead of epoch seconds, and the seconds each token has left.
 * Fields the answer lacks show as `-`; it never holds a token or key.
 */

type Row = Readonly<Record<string, unknown>>;

const isRecord = (value: unknown): value is Row =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Epoch seconds as `2030-01-01T00:00:00Z`; `-` for anything else. */
export function isoTime(value: unknown): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) return '-';
  const date = new Date(value * 1000);
  return Number.isNaN(date.getTime()) ? '-' : date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const text = (value: unknown): string =>
  value === undefined || value === null || value === '' ? '-' : String(value);

/** Columns padded to their widest cell, two spaces apart; the last column unpadded. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

function lease(value: unknown): string {
  if (!isRecord(value) || value.held !== true) return '-';
  const owner = typeof value.owner === 'string' ? ` by ${value.owner}` : '';
  return `held until ${isoTime(value.until)}${owner}`;
}

function failure(value: unknown): string {
  if (!isRecord(value)) return '-';
  return `${text(value.code)} at ${isoTime(value.at)}`;
}

function tokenRow(token: Row): string[] {
  return [
    text(token.scope),
    text(token.state),
    isoTime(token.issued_at),
    isoTime(token.expires_at),
    text(token.seconds_left),
    token.in_use === true ? 'yes' : 'no',
    isoTime(token.last_used_at),
    lease(token.lease),
    failure(token.last_failure),
  ];
}

function jobRow(job: Row): string[] {
  const lastError =
    job.last_error === undefined ? '-' : `${text(job.last_error)} at ${isoTime(job.last_error_at)}`;
  return [
    text(job.business_application_id),
    text(job.state),
    text(job.attempts),
    text(job.issue_count),
    isoTime(job.stored_at),
    text(job.secret_name),
    isoTime(job.running_until),
    job.awaiting_store === true ? 'yes' : 'no',
    lastError,
  ];
}

function policyLine(policy: unknown): string {
  if (!isRecord(policy)) return '-';
  const loaded = policy.loaded_at === undefined ? '' : `, loaded ${isoTime(policy.loaded_at)}`;
  return (
    `${text(policy.version)}${loaded}: ${text(policy.scopes)} scopes, ` +
    `${text(policy.principals)} principals, ${text(policy.key_issuing_ids)} key-issuing ids`
  );
}

/** Whether `value` looks like a status answer: `{now, tokens: [...], key_jobs: [...]}`. */
export function isStatusReport(value: unknown): value is Row {
  return isRecord(value) && Array.isArray(value.tokens) && Array.isArray(value.key_jobs);
}

/** The status answer as text: its time and policy, then a table of tokens and one of key jobs. */
export function formatStatus(report: Row): string {
  const tokens = (report.tokens as unknown[]).filter(isRecord);
  const jobs = (report.key_jobs as unknown[]).filter(isRecord);
  const parts = [
    `now     ${isoTime(report.now)}\npolicy  ${policyLine(report.policy)}`,
    tokens.length === 0
      ? 'Tokens: none cached'
      : `Tokens:\n${table(
          [
            'SCOPE',
            'STATE',
            'ISSUED_AT',
            'EXPIRES_AT',
            'SECONDS_LEFT',
            'IN_USE',
            'LAST_USED_AT',
            'LEASE',
            'LAST_FAILURE',
          ],
          tokens.map(tokenRow),
        )}`,
    jobs.length === 0
      ? 'Key jobs: none'
      : `Key jobs:\n${table(
          [
            'BUSINESS_APPLICATION',
            'STATE',
            'ATTEMPTS',
            'ISSUED',
            'STORED_AT',
            'SECRET',
            'RUNNING_UNTIL',
            'AWAITING_STORE',
            'LAST_ERROR',
          ],
          jobs.map(jobRow),
        )}`,
  ];
  return `${parts.join('\n\n')}\n`;
}
