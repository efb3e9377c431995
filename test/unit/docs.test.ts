/**
 * The documentation a user of this repository reads: README.md, docs/ and the
 * client package's README. Its links must lead somewhere inside the
 * repository, and it must not send readers to documents they do not have.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADMIN_EVENTS } from '../../functions/admin/admin-event.js';

const ROOT = resolve(import.meta.dirname, '../..');
const DOCS = [
  'README.md',
  'client/README.md',
  ...readdirSync(resolve(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

const read = (path: string) => readFileSync(resolve(ROOT, path), 'utf8');
/** Markdown without its fenced code blocks: a `#` in a shell example is no heading. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

/** GitHub's anchors for a file's headings (lower case, punctuation dropped, spaces to hyphens). */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of prose(text).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = (heading as string)
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

/** `[text](target)` links of a file, images included, outside code blocks. */
const links = (text: string) =>
  [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)].map(([, target]) => target as string);

describe('documentation', () => {
  it('finds the docs it checks', () => {
    expect(DOCS).toEqual(
      expect.arrayContaining(['docs/operations.md', 'docs/cache-design.md', 'docs/deploying.md']),
    );
  });

  it.each(DOCS)('%s links only to files and headings inside the repository', (doc) => {
    const broken: string[] = [];
    for (const target of links(read(doc))) {
      if (/^https?:/.test(target)) continue;
      const [path = '', anchor] = target.split('#');
      const file = path === '' ? resolve(ROOT, doc) : resolve(ROOT, dirname(doc), path);
      const inside = !relative(ROOT, file).startsWith('..');
      if (!inside || !existsSync(file)) {
        broken.push(`${target}: no such file in the repository`);
        continue;
      }
      if (anchor !== undefined && statSync(file).isFile() && file.endsWith('.md')) {
        const known = anchors(readFileSync(file, 'utf8'));
        if (!known.has(anchor)) broken.push(`${target}: no heading with that anchor`);
      }
    }
    expect(broken).toEqual([]);
  });

  it.each(DOCS)(
    '%s sends nobody to the product contract, the provider document or an issue',
    (doc) => {
      const text = read(doc);
      expect(text).not.toMatch(/SPEC|\.\.\/shared|provider-auth-interface|STYLE\.md/);
      expect(text).not.toMatch(/\bissues? #?\d+/i);
      expect(text).not.toMatch(/(^|\s)#\d+\b/m);
    },
  );

  it('keeps the README short enough to read in ten minutes', () => {
    expect(read('README.md').trimEnd().split('\n').length).toBeLessThanOrEqual(250);
  });

  it('lists admin events without naming a document the user does not have', () => {
    for (const event of ADMIN_EVENTS) expect(event).not.toMatch(/SPEC|section \d/);
  });
});
