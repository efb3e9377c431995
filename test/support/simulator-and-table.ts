import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import {
  type ProviderSimulator,
  type SimulatorOptions,
  startProviderSimulator,
} from '../../local/provider-simulator.js';
import { createTestTable, dynamoClient } from './dynamodb.js';

/** What an integration test file shares: filled in by the hooks below. */
export interface SimulatorAndTable {
  readonly sim: ProviderSimulator;
  readonly client: DynamoDBClient;
  /** A fresh table for each test. */
  readonly table: string;
}

/**
 * Registers the hooks most integration files need: one provider simulator and
 * one DynamoDB Local client per file, the simulator reset and a fresh table
 * before each test. Read the fields inside tests and hooks, not at import.
 */
export function useSimulatorAndTable(options?: SimulatorOptions): SimulatorAndTable {
  const world = {} as { sim: ProviderSimulator; client: DynamoDBClient; table: string };
  beforeAll(async () => {
    world.sim = await startProviderSimulator(options);
    world.client = dynamoClient();
  });
  afterAll(async () => {
    await world.sim?.close();
    world.client?.destroy();
  });
  beforeEach(async () => {
    world.sim.reset();
    world.table = await createTestTable(world.client);
  });
  return world;
}
