import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import { bundle } from '../support/bundle.js';

const ROOT = resolve(import.meta.dirname, '../..');
/** What the client may add to a caller's bundle beyond the signer and the credential chain. */
const OWN_CODE_BUDGET_BYTES = 16 * 1024;

it('adds no more than the signer, the credential chain and its own few KB to a bundle', async () => {
  const reference = await bundle({
    contents: [
      "import { Sha256 } from '@aws-crypto/sha256-js';",
      "import { fromNodeProviderChain } from '@aws-sdk/credential-providers';",
      "import { SignatureV4 } from '@smithy/signature-v4';",
      'export { Sha256, fromNodeProviderChain, SignatureV4 };',
    ].join('\n'),
  });
  const client = await bundle({ path: resolve(ROOT, 'client/index.ts') });

  expect(client.bytes - reference.bytes).toBeLessThan(OWN_CODE_BUDGET_BYTES);
  const heavy = client.inputs.filter((input) =>
    /^(functions|local)\/|^client\/(cli|admin|stack-file)|node_modules\/(@aws-sdk\/client-lambda|@aws-lambda-powertools|valibot)\//.test(
      input,
    ),
  );
  expect(client.inputs).toContain('client/token-vending-client.ts');
  expect(heavy).toEqual([]);
});
