import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { checkPages, docPages, parsePage } from './helpers/doc-links.ts';

/**
 * The docs are a small site in the repository (README.md and docs/): every relative link,
 * image and anchor must resolve as GitHub resolves it, nothing may link outside the
 * repository, and no page names an issue number. No network: files and headings only.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const listed = (problems: { where: string; message: string }[]): string => problems.map((p) => `  ${p.where}  ${p.message}`).join('\n');

describe('the documentation in this repository', () => {
  const pages = docPages(root);

  it('is README.md plus the pages under docs/, with docs/index.md as the map', () => {
    expect(pages).toContain('README.md');
    expect(pages).toContain('docs/index.md');
    expect(pages.filter((p) => p.startsWith('docs/')).length).toBeGreaterThan(5);
  });

  it('has no broken link, anchor or image, no link outside the repository and no issue number', () => {
    const problems = checkPages(root, pages);
    expect(problems, `broken links or forbidden text (file:line):\n${listed(problems)}`).toEqual([]);
  });

  it('reaches every docs page from docs/index.md', () => {
    const linked = new Set(
      parsePage(readFileSync(path.join(root, 'docs/index.md'), 'utf8')).links.map((l) => path.posix.normalize(path.posix.join('docs', l.href.split('#')[0] ?? ''))),
    );
    const unlinked = pages.filter((p) => p.startsWith('docs/') && p !== 'docs/index.md' && !linked.has(p));
    expect(unlinked, `pages docs/index.md does not link: ${unlinked.join(', ')}`).toEqual([]);
  });

  it('keeps README.md short: at most 200 lines', () => {
    const lines = readFileSync(path.join(root, 'README.md'), 'utf8').trimEnd().split('\n').length;
    expect(lines, `README.md has ${lines} lines; move detail into docs/`).toBeLessThanOrEqual(200);
  });
});

describe('the link checker', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'trainsync-doc-links-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  const write = (rel: string, text: string): void => {
    mkdirSync(path.dirname(path.join(scratch, rel)), { recursive: true });
    writeFileSync(path.join(scratch, rel), text);
  };

  it('finds each kind of broken link, with its file and line, and accepts the good ones', () => {
    write('README.md', ['# Title', '', 'See [the guide](docs/guide.md#set-up-twice-1) and [top](#title).', ''].join('\n'));
    write(
      'docs/guide.md',
      [
        '# Guide',
        '',
        '## Set up `twice`',
        '',
        '## Set up twice',
        '',
        '| a | b |',
        '|---|---|',
        '| [missing](nope.md) | ![shot](pic.png) |',
        '',
        'A [bad anchor](#no-such-heading), one [outside](../../etc/passwd), [another site](https://example.org/x),',
        '[fine](https://nodejs.org/api/) and `[not a link](nowhere.md)`.',
        '',
        '```sh',
        '[also not a link](nowhere.md)',
        '```',
        '',
        'From issue 12, see ../shared/notes and ARCHITECTURE.md.',
        '',
      ].join('\n'),
    );
    write('docs/pic.png', 'png');

    const problems = checkPages(scratch, docPages(scratch));
    expect(problems.map((p) => p.where).sort()).toEqual(['docs/guide.md:9', 'docs/guide.md:11', 'docs/guide.md:11', 'docs/guide.md:11', 'docs/guide.md:18', 'docs/guide.md:18', 'docs/guide.md:18'].sort());
    const messages = listed(problems);
    expect(messages).toContain('nope.md: no such file (docs/nope.md)');
    expect(messages).toContain('#no-such-heading: no heading of docs/guide.md has the anchor #no-such-heading');
    expect(messages).toContain('../../etc/passwd: resolves outside the repository');
    expect(messages).toContain('https://example.org/x: a link outside the repository');
    expect(messages).toContain('names an issue number');
    expect(messages).toContain('points at ../shared');
    expect(messages).toContain('names ARCHITECTURE.md');
  });

  it('slugs headings as GitHub does: punctuation dropped, code kept, duplicates numbered', () => {
    const { anchors } = parsePage(['# When a run says ok', '## `training.assignment_status`', '## Drift: the platform as it is now', '## FAQ', '## FAQ', ''].join('\n'));
    expect([...anchors]).toEqual(['when-a-run-says-ok', 'trainingassignment_status', 'drift-the-platform-as-it-is-now', 'faq', 'faq-1']);
  });
});
