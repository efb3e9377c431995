/**
 * Finds the runtimes the other-language examples need on this machine, or
 * says why one is missing and how to get it from Debian, for a clear skip.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export type Runtime = { ok: true; command: string } | { ok: false; reason: string };

const output = (command: string, args: string[]): string | undefined => {
  const run = spawnSync(command, args, { encoding: 'utf8', timeout: 20_000 });
  return run.error || run.status !== 0 ? undefined : `${run.stdout}${run.stderr}`.trim();
};

/** A python3 that imports botocore: the one on PATH, or Debian's (python3-botocore). */
export function findPython(): Runtime {
  for (const candidate of ['python3', '/usr/bin/python3']) {
    const executable = output(candidate, ['-c', 'import botocore, sys; print(sys.executable)']);
    if (executable) return { ok: true, command: executable };
  }
  return {
    ok: false,
    reason: 'no python3 that imports botocore (Debian: apt-get install python3-botocore)',
  };
}

/** Debian's GOPATH of Go library sources (golang-github-aws-aws-sdk-go-v2-dev). */
export const DEBIAN_GOPATH = '/usr/share/gocode';

/** The go toolchain, when Debian's aws-sdk-go-v2 sources are there to build against. */
export function findGo(): Runtime {
  if (!output('go', ['version'])) {
    return { ok: false, reason: 'no go toolchain (Debian: apt-get install golang-go)' };
  }
  if (!existsSync(`${DEBIAN_GOPATH}/src/github.com/aws/aws-sdk-go-v2/config`)) {
    return {
      ok: false,
      reason:
        'aws-sdk-go-v2 not installed (Debian: apt-get install golang-github-aws-aws-sdk-go-v2-dev)',
    };
  }
  return { ok: true, command: 'go' };
}

/** javac and java: a JDK, not only a JRE. */
export function findJava(): Runtime {
  if (!output('javac', ['-version']) || !output('java', ['-version'])) {
    return {
      ok: false,
      reason: 'no JDK with javac (Debian: apt-get install default-jdk-headless)',
    };
  }
  return { ok: true, command: 'java' };
}

/** curl 7.76 or later: --aws-sigv4 (7.75) and --fail-with-body (7.76). */
export function findCurl(): Runtime {
  const version = /^curl (\d+)\.(\d+)/.exec(output('curl', ['--version']) ?? '');
  if (!version) return { ok: false, reason: 'no curl (Debian: apt-get install curl)' };
  const [major, minor] = [Number(version[1]), Number(version[2])];
  if (major < 7 || (major === 7 && minor < 76)) {
    return { ok: false, reason: `curl ${major}.${minor} is older than 7.76` };
  }
  return { ok: true, command: 'curl' };
}
