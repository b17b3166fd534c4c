/**
 * How wide a person's output may be, and text broken to fit it: the CLI's tables and
 * sentences (src/commands/render/terminal.ts) and the log lines a terminal shows (runtime/log.ts).
 */

/** The widest a table or a line printed for a person may be (--json carries everything). */
export const MAX_WIDTH = 100;
/** Narrower than this, nothing can be laid out; a smaller COLUMNS is taken as this. */
const MIN_WIDTH = 40;

/** The shell's COLUMNS, as the composition root handed it over (undefined: not set). */
let columnsSetting: string | undefined;

/** Called once by src/cli.ts with the environment's COLUMNS. */
export function useColumnsVariable(value: string | undefined): void {
  columnsSetting = value;
}

/**
 * The columns output for a person may take: the terminal's when stdout is one, else
 * COLUMNS (a shell's, a test's), else 100; never more than 100 (docs/reference.md).
 * COLUMNS is the terminal's setting, not trainsync's configuration: src/config.ts reads it and
 * the composition root (src/cli.ts) hands it over once with useColumnsVariable.
 */
export function outputWidth(stream: { isTTY?: boolean; columns?: number } = process.stdout, columnsVariable: string | undefined = columnsSetting): number {
  const fromEnv = Number(columnsVariable);
  const columns = (stream.isTTY === true && stream.columns ? stream.columns : undefined) ?? (Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : undefined) ?? MAX_WIDTH;
  return Math.max(MIN_WIDTH, Math.min(MAX_WIDTH, columns));
}

/**
 * The width sentences wrap at: known on a terminal (stdout's) or from COLUMNS. Unknown
 * (a pipe, a file, no COLUMNS): undefined, and a log file keeps each sentence on one
 * line, for grep; tables are still drawn at most 100 wide (outputWidth).
 */
export function lineWidth(stream: { isTTY?: boolean; columns?: number } = process.stdout, columnsVariable: string | undefined = columnsSetting): number | undefined {
  const known = (stream.isTTY === true && stream.columns !== undefined && stream.columns > 0) || (Number.isInteger(Number(columnsVariable)) && Number(columnsVariable) > 0);
  return known ? outputWidth(stream, columnsVariable) : undefined;
}

/** Cuts `text` to `width` visible characters (an ellipsis marks the cut). */
export function fitWidth(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

/** Characters a word too long for a line may be broken after (e-mail addresses, paths, key=value lists). */
const BREAK_AFTER = /[.@/\\=;,:_-]/;

/**
 * `word` in pieces of at most `width`: broken after the last break character that
 * leaves a piece of at least half the width, else hard at the width.
 */
export function splitWord(word: string, width: number): string[] {
  const pieces: string[] = [];
  let rest = word;
  while (rest.length > width) {
    let at = -1;
    for (let i = width - 1; i >= Math.floor(width / 2); i--) {
      if (BREAK_AFTER.test(rest[i]!)) {
        at = i + 1;
        break;
      }
    }
    const cut = at > 0 ? at : width;
    pieces.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  pieces.push(rest);
  return pieces;
}

/**
 * One line in lines of at most `width`, broken at spaces; the lines after the first
 * start with `hanging` (default: the line's own indent and two spaces). A word longer
 * than a line is broken after a `.`, `@`, `/`, `-`… (else anywhere): no line is longer.
 */
export function wrapLine(line: string, width: number, hanging?: string): string[] {
  if (line.length <= width) return [line];
  const indent = /^ */.exec(line)![0];
  const next = hanging ?? `${indent}  `;
  const out: string[] = [];
  let current = indent;
  let empty = true;
  const flush = (): void => {
    out.push(current.trimEnd());
    current = next;
    empty = true;
  };
  for (const word of line.slice(indent.length).split(' ')) {
    const joined = empty ? `${current}${word}` : `${current} ${word}`;
    if (joined.length <= width) {
      current = joined;
      empty = false;
      continue;
    }
    if (!empty) flush();
    // A word longer than what is left of a line: pieces, each filling a line.
    let rest = word;
    while (current.length + rest.length > width) {
      const piece = splitWord(rest, Math.max(1, width - current.length))[0]!;
      current += piece;
      rest = rest.slice(piece.length);
      empty = false;
      flush();
    }
    if (rest !== '') {
      current += rest;
      empty = false;
    }
  }
  if (!empty || out.length === 0) out.push(current.trimEnd());
  return out;
}

