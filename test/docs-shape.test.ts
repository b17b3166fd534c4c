import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { docPages } from './helpers/doc-links.ts';
import { checkShapes, longCells, MAX_CELL_CHARS } from './helpers/doc-shape.ts';

/**
 * The docs are read by scanning: a table row says what a thing is, its default and one
 * example, and anything longer lives in prose below the table, linked from the cell.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

describe('the documentation in this repository', () => {
  it(`has no table cell over ${MAX_CELL_CHARS} characters in README.md or docs/`, () => {
    const problems = checkShapes(root, docPages(root));
    const listed = problems.map((p) => `  ${p.where}  ${p.message}`).join('\n');
    expect(problems, `table cells too long to scan (file:line):\n${listed}`).toEqual([]);
  });
});

describe('the table-cell check', () => {
  it('names the file, the line and the start of each long cell, in any column and in nested tables, and passes short ones', () => {
    const long = `Detail ${'x'.repeat(MAX_CELL_CHARS)}`;
    const page = [
      '# Page',
      '',
      '| name | meaning |',
      '|---|---|',
      '| `A` | short |',
      `| \`B\` | ${long} |`,
      `| ${long} | short |`,
      '',
      `- a list item with a table:`,
      '',
      '  | a | b |',
      '  |---|---|',
      `  | ${long} | ok |`,
      '',
      `A paragraph may be long: ${long}`,
      '',
    ].join('\n');
    const problems = longCells(page, 'docs/page.md');
    expect(problems.map((p) => p.where)).toEqual(['docs/page.md:6', 'docs/page.md:7', 'docs/page.md:13']);
    expect(problems[0]?.message).toContain(`${long.length} characters`);
    expect(problems[0]?.message).toContain('starting "Detail xxx');
  });

  it('accepts a cell of exactly the limit and refuses one character more', () => {
    const table = (cell: string): string => ['| a |', '|---|', `| ${cell} |`, ''].join('\n');
    expect(longCells(table('y'.repeat(MAX_CELL_CHARS)), 'README.md')).toEqual([]);
    expect(longCells(table('y'.repeat(MAX_CELL_CHARS + 1)), 'README.md').map((p) => p.where)).toEqual(['README.md:3']);
  });
});
