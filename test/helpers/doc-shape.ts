import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Lexer, type Token, type Tokens } from 'marked';
import type { DocProblem } from './doc-links.ts';

/**
 * Shape checks a reader feels before they read a word: a table is for scanning, so no cell
 * may hold a paragraph. Detail goes in prose below the table, linked from the cell.
 */

/** Longest a table cell may be, in characters of its Markdown source. */
export const MAX_CELL_CHARS = 300;

/** Every table of the page, nested ones (in lists, block quotes) included. */
function tables(tokens: readonly Token[]): Tokens.Table[] {
  const found: Tokens.Table[] = [];
  for (const token of tokens) {
    if (token.type === 'table') found.push(token as Tokens.Table);
    else if ('tokens' in token && Array.isArray(token.tokens)) found.push(...tables(token.tokens as Token[]));
    if (token.type === 'list') for (const item of (token as Tokens.List).items) found.push(...tables(item.tokens));
  }
  return found;
}

/** Cells longer than `limit`, each named by `file:line` and the cell's first words. */
export function longCells(source: string, file: string, limit = MAX_CELL_CHARS): DocProblem[] {
  const problems: DocProblem[] = [];
  const lines = source.split('\n');
  let nextLine = 0;
  for (const table of tables(Lexer.lex(source, { gfm: true }))) {
    // A nested table's raw is dedented, so find its header line by content, in order.
    const header = (table.raw.split('\n')[0] ?? '').trim();
    let index = lines.findIndex((line, i) => i >= nextLine && line.includes(header));
    if (index < 0) index = Math.max(0, lines.findIndex((line) => line.includes(header)));
    nextLine = index + 1;
    const firstLine = index + 1;
    // Row lines of the table as written: header, delimiter, then one line per body row.
    const rows: { line: number; cells: Tokens.TableCell[] }[] = [
      { line: firstLine, cells: table.header },
      ...table.rows.map((cells, i) => ({ line: firstLine + 2 + i, cells })),
    ];
    for (const row of rows) {
      for (const cell of row.cells) {
        const text = cell.text.trim();
        if (text.length <= limit) continue;
        problems.push({
          where: `${file}:${row.line}`,
          message: `a table cell of ${text.length} characters (at most ${limit}) starting "${text.slice(0, 60)}…": keep the row short and move the detail to a paragraph below the table, linked from the cell`,
        });
      }
    }
  }
  return problems;
}

/** Long cells of every listed page (paths relative to `root`). */
export function checkShapes(root: string, pages: readonly string[], limit = MAX_CELL_CHARS): DocProblem[] {
  return pages.flatMap((page) => longCells(readFileSync(path.join(root, page), 'utf8'), page, limit));
}
