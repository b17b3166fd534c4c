/**
 * A `.env` file: `NAME=value` lines, as docker compose, Node's `--env-file` and most tools
 * read them. Node 22's own parser (`util.parseEnv`) gives the values; it skips what it cannot
 * read without a word, so every line is checked here first and anything else (a line that is
 * not an assignment, a name that cannot be a variable, a quote never closed, text after a
 * closing quote, a control character, a name given twice) stops with the file and the line.
 */
import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { TrainsyncError } from './errors.ts';

/** A `.env` file that cannot be read as it stands: one line naming the file and the line. */
export class EnvFileError extends TrainsyncError {
  constructor(message: string, cause?: unknown) {
    super(message, { code: 'ENV_FILE', retryable: false, cause });
    this.name = 'EnvFileError';
  }
}

/** The assignments of a `.env` file, each with the line it starts on. */
export interface EnvFileEntries {
  values: Readonly<Record<string, string>>;
  /** The line (1-based) each name is set on. */
  lines: ReadonlyMap<string, number>;
}

const ASSIGNMENT = /^\s*(?:export\s+)?([^=\s]+)\s*=[ \t]*(.*)$/;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** After a closing quote only blanks and a comment may follow. */
const REST = /^\s*(?:#.*)?$/;
/** Control characters but the tab (a NUL would cut a value short, silently; a lone CR ends a line for some readers). */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;

/** A name as shown in a message: printable, and short. */
function shown(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

/**
 * The assignments of `text` (the contents of `file`, named in messages). Throws
 * EnvFileError on the first line it cannot read, naming `file` and that line.
 */
export function parseEnvFile(text: string, file: string): EnvFileEntries {
  const source = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const rows = source.split('\n').map((row) => (row.endsWith('\r') ? row.slice(0, -1) : row));
  const lines = new Map<string, number>();
  const fail = (line: number, why: string): never => {
    throw new EnvFileError(`${file} line ${line}: ${why}; lines read NAME=value (a comment starts with #)`);
  };
  for (let i = 0; i < rows.length; i += 1) {
    const row = rows[i] ?? '';
    const line = i + 1;
    const control = CONTROL.exec(row);
    if (control) fail(line, `a control character (U+${control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')})`);
    const trimmed = row.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const match = ASSIGNMENT.exec(row);
    if (!match) fail(line, `not NAME=value: ${shown(trimmed)}`);
    const [, name = '', value = ''] = match!;
    if (!NAME.test(name)) fail(line, `${shown(name)} cannot be a variable name (letters, digits and _, not starting with a digit)`);
    const first = lines.get(name);
    if (first !== undefined) fail(line, `${name} is set again (first on line ${first}); keep one`);
    lines.set(name, line);
    const quote = value[0];
    if (quote !== '"' && quote !== "'" && quote !== '`') continue;
    // A quoted value may run over several lines: find where it closes.
    let rest = value.slice(1);
    let at = i;
    for (;;) {
      const close = rest.indexOf(quote);
      if (close >= 0) {
        if (!REST.test(rest.slice(close + 1))) fail(at + 1, `text after the closing ${quote} of ${name}: ${shown(rest.slice(close + 1).trim())}`);
        break;
      }
      at += 1;
      if (at >= rows.length) fail(line, `the ${quote} that opens ${name}'s value is never closed`);
      rest = rows[at] ?? '';
      const inside = CONTROL.exec(rest);
      if (inside) fail(at + 1, `a control character (U+${inside[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')})`);
    }
    i = at;
  }
  const values = parseEnv(source);
  // The two readings must agree on the names: where Node's parser reads a line otherwise (it
  // keeps `export A=` with nothing after it as a name "export A"), say which line.
  const missing = [...lines.keys()].find((name) => !Object.hasOwn(values, name));
  const extra = Object.keys(values).find((name) => !lines.has(name));
  if (missing !== undefined || extra !== undefined) {
    const line = missing !== undefined ? (lines.get(missing) ?? 1) : rows.findIndex((row) => row.includes(extra ?? '')) + 1 || 1;
    const how = extra === undefined ? `it does not read ${missing}` : `it reads a name ${shown(extra)}`;
    throw new EnvFileError(`${file} line ${line}: Node's .env reader takes this line otherwise (${how}); write it as NAME=value, with a value`);
  }
  const read: Record<string, string> = {};
  for (const name of lines.keys()) read[name] = values[name] ?? '';
  return { values: Object.freeze(read), lines };
}

/**
 * Reads `file` when it exists and sets in `env` each of its variables that `env` does not
 * already hold (the environment wins over the file). Returns what the file holds (the
 * variables set from it and those the environment kept), or undefined when there is no file.
 */
export function applyEnvFile(file: string, env: Record<string, string | undefined>, shownAs = file): EnvFileEntries | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw new EnvFileError(`${shownAs} cannot be read (${code ?? String(error)}): fix its permissions or remove it`, error);
  }
  const entries = parseEnvFile(text, shownAs);
  for (const [name, value] of Object.entries(entries.values)) {
    if (env[name] === undefined) env[name] = value;
  }
  return entries;
}
