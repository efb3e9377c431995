import { expect, it } from 'vitest';
import { bundle } from '../support/bundle.js';
import { CLIENT_PACKAGE_NAME } from '../support/client-package.js';

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
  // The package as a caller imports it: its `exports` entry, the built client/dist.
  const client = await bundle({ contents: `export * from '${CLIENT_PACKAGE_NAME}';` });

  expect(client.bytes - reference.bytes).toBeLessThan(OWN_CODE_BUDGET_BYTES);
  const heavy = client.inputs.filter((input) =>
    /^(functions|local)\/|^client\/(?!dist\/)|^client\/dist\/(cli|admin|tvm|agent|exec|status-table|project-script)|node_modules\/(@aws-sdk\/client-lambda|@aws-lambda-powertools|valibot)\//.test(
      input,
    ),
  );
  expect(client.inputs).toContain('client/dist/token-vending-client.js');
  expect(heavy).toEqual([]);
});
