import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/** An item as the DynamoDB API carries it. */
export type Item = Record<string, AttributeValue>;

/** A number attribute. */
export const num = (value: number): AttributeValue => ({ N: String(value) });

/** A number attribute's value; absent, or of another type (a hand edit), reads as undefined. */
export const readNum = (a: AttributeValue | undefined): number | undefined =>
  a?.N === undefined ? undefined : Number(a.N);
