/**
 * The stage fields that decide how a release reaches callers and how a stage
 * is removed: checked once, with every problem named.
 */

/** How a release shifts the vend URL's traffic (CodeDeploy's predefined Lambda configurations). */
export const VEND_DEPLOYMENTS = [
  'Canary10Percent5Minutes',
  'Canary10Percent10Minutes',
  'Canary10Percent15Minutes',
  'Canary10Percent30Minutes',
  'Linear10PercentEvery1Minute',
  'Linear10PercentEvery2Minutes',
  'Linear10PercentEvery3Minutes',
  'Linear10PercentEvery10Minutes',
  'AllAtOnce',
] as const;
export type VendDeployment = (typeof VEND_DEPLOYMENTS)[number];

/** What a stage file writes about releases (part of StageInput). */
export interface StageReleaseInput {
  /**
   * How a release of vend shifts traffic from the old version to the new:
   * canary by default (10 % for 5 minutes, then all), rolled back if a vend
   * release alarm fires meanwhile. `AllAtOnce` for throwaway stages.
   */
  readonly vendDeployment?: VendDeployment;
  /** A release rolls back when vend's latency p99 over a minute exceeds this. Default 3000 ms. */
  readonly vendLatencyP99AlarmMs?: number;
  /**
   * Provisioned concurrency of vend's `live` alias, for callers that cannot
   * take a cold start. Billed whether used or not. Default: none.
   */
  readonly provisionedConcurrency?: number;
  /**
   * A stage to be removed whole: termination protection off, and the table,
   * key, log groups and the access policy's AppConfig application deleted
   * with the stack instead of kept. Default false.
   */
  readonly throwaway?: boolean;
}

export interface StageRelease {
  readonly vendDeployment: VendDeployment;
  readonly vendLatencyP99AlarmMs: number;
  readonly provisionedConcurrency?: number;
  readonly throwaway: boolean;
}

export const RELEASE_FIELDS = [
  'vendDeployment',
  'vendLatencyP99AlarmMs',
  'provisionedConcurrency',
  'throwaway',
] as const;

const isInteger = (value: unknown, min: number, max: number): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;

/** Checks the release fields of a stage; problems go to `problems`. */
export function checkRelease(
  input: Readonly<Record<string, unknown>>,
  problems: string[],
): StageRelease {
  const deployment = input.vendDeployment ?? 'Canary10Percent5Minutes';
  if (!(VEND_DEPLOYMENTS as readonly unknown[]).includes(deployment)) {
    problems.push(`vendDeployment must be one of ${VEND_DEPLOYMENTS.join(', ')}`);
  }
  const latency = input.vendLatencyP99AlarmMs ?? 3000;
  if (!isInteger(latency, 100, 30_000)) {
    problems.push('vendLatencyP99AlarmMs must be an integer from 100 to 30000');
  }
  const provisioned = input.provisionedConcurrency;
  if (provisioned !== undefined && !isInteger(provisioned, 1, 1000)) {
    problems.push('provisionedConcurrency must be an integer from 1 to 1000');
  }
  const throwaway = input.throwaway ?? false;
  if (typeof throwaway !== 'boolean') problems.push('throwaway must be true or false');
  if (throwaway === true && input.terminationProtection === true) {
    problems.push('a throwaway stage cannot have terminationProtection: it is meant to be removed');
  }
  return {
    vendDeployment: deployment as VendDeployment,
    vendLatencyP99AlarmMs: latency as number,
    ...(isInteger(provisioned, 1, 1000) ? { provisionedConcurrency: provisioned } : {}),
    throwaway: throwaway === true,
  };
}
