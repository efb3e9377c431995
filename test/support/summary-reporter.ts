import type { Reporter, TestModule } from 'vitest/node';

/** Ends every run with one plain line, `N passed, N failed, N skipped`, for CI logs. */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const count = (state: 'passed' | 'failed' | 'skipped') =>
      testModules.reduce((sum, m) => sum + [...m.children.allTests(state)].length, 0);
    // A file that failed to load has no failed test of its own: count it once.
    const failedModules = testModules.filter(
      (m) => !m.ok() && [...m.children.allTests('failed')].length === 0,
    ).length;
    process.stdout.write(
      `\n${count('passed')} passed, ${count('failed') + failedModules} failed, ${count('skipped')} skipped\n`,
    );
  }
}
