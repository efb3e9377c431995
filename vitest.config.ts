import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Child processes: each test file gets its own Node process, so servers,
    // timers and env changes in one file never leak into another.
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
