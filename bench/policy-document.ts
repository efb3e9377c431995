/**
 * The bench's large access policy: 10,000 business-application scopes and
 * 2,000 grants over 20 accounts (about 500 KB of JSON), as a partner running
 * payments for thousands of merchants would have. Deterministic.
 */
import { seededRandom } from './stats.js';

export const LARGE_SCOPES = 10_000;
export const LARGE_GRANTS = 2_000;

/** The principal granted in both policies: the bench caller's role. */
export const BENCH_ROLE = 'arn:aws:iam::111122223333:role/checkout';

/** A document of `scopes` scopes and `grants` grants; the bench role is granted `granted` first. */
export function policyDocument(options: {
  scopes: number;
  grants: number;
  granted: readonly string[];
}): string {
  const random = seededRandom(17);
  const scopes = [
    ...options.granted,
    ...Array.from(
      { length: options.scopes - options.granted.length },
      (_, i) => `ba_m_${String(i).padStart(5, '0')}`,
    ),
  ];
  const grants = [{ principal: BENCH_ROLE, scopes: [...options.granted] }];
  for (let i = 1; i < options.grants; i++) {
    const account = String(200000000000 + (i % 20));
    const picked = Array.from({ length: 5 }, () => scopes[Math.floor(random() * scopes.length)]);
    grants.push({
      principal: `arn:aws:iam::${account}:role/merchant-svc-${String(i).padStart(5, '0')}`,
      scopes: [...new Set(picked as string[])],
    });
  }
  return JSON.stringify({
    scopes,
    grants,
    keyIssuing: { businessApplicationIds: scopes.slice(0, 1000) },
  });
}
