import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The client package is built first: tests run its dist/ as it is shipped.
    globalSetup: ['test/support/build-client.ts', 'test/support/global-setup.ts'],
    // Child processes: each test file gets its own Node process, so servers,
    // timers and env changes in one file never leak into another.
    pool: 'forks',
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    // The AWS SDK warns on every Node 20 process that it will need Node 22 from 2027.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
