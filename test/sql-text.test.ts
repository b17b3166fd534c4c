import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * No SQL text is built from values (docs/security.md, "trainsync's own database login"): the
 * per-transaction scope (trainsync.org) guards against a forgotten filter, not against a
 * statement whose text an attacker chose, so every value travels as a parameter. This test
 * reads src/ and jobs/ for `.query(`, `execute(`, `sql.raw(` and `sql.lit(` calls whose text is
 * a template literal with `${…}` or a string joined with `+`, and allows only identifier
 * quoting (escapeIdentifier, quoteRole), compile-time constants (UPPER_CASE), and the
 * exceptions listed below, each with its reason. Kysely's sql`…` tag is not such a call: its
 * `${…}` are parameters.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Identifier quoting, anywhere in the interpolation, or a module constant. */
const QUOTING = /^(?:[\w.]+\.)?(?:escapeIdentifier|quoteRole)\([^`$]*\)$/;
const CONSTANT = /^[A-Z][A-Z0-9_]*$/;

/** Each interpolation allowed beyond QUOTING and CONSTANT, by file, with its reason. */
const ALLOWED: Record<string, { exprs: string[]; reason: string }[]> = {
  'src/warehouse/pool.ts': [
    { exprs: ["options.role ? `; set role ${quoteRole(options.role)}` : ''", "options.owner ? OWNER_SETTINGS : ''"], reason: 'SET takes no parameters: the role goes through quoteRole (a plain name or refused), the owner\'s settings are a constant' },
  ],
  'src/warehouse/commit-order.ts': [{ exprs: ['setup'], reason: "one of two constant strings (set_config of synchronous_commit, or nothing), chosen by a boolean option" }],
  'src/warehouse/load-reading.ts': [
    {
      exprs: ['spec.table', 'spec.key', "columns.join(', ')", 'columns.length + 2', "columns.map((_c, i) => `$${i + 2}`).join(', ')", "columns.map((c) => `${c} = excluded.${c}`).join(', ')"],
      reason: "a resource's declaration in src/sync/resources (table, key and columns are code, not input) and the placeholders' numbers",
    },
  ],
  'src/warehouse/load-staged.ts': [
    { exprs: ['spec.sightings', 'spec.key', 'spec.table'], reason: "a resource's declaration in src/sync/resources: table and column names are code, not input" },
    { exprs: ['text'], reason: 'EXPLAIN of the statements statementsOf builds from the same declaration (bench only)' },
  ],
  'src/warehouse/upsert-listed.ts': [
    {
      exprs: ['spec.table', "keyIn(keyColumns(spec), '$1')"],
      reason: "a listing's declaration (table and key columns are code); keyIn writes the placeholder ($1) and those declared names. The upsert's text is built once per declaration from the same names (upsertText) and passed whole",
    },
  ],
  'src/warehouse/scope.ts': [
    {
      exprs: ['withoutEnd(text)', 'setScope'],
      reason: "BEGIN and the scope in one simple query (one round trip), which takes no parameters: a BEGIN the caller sent (code, matched by BEGIN_RE), and the handle's set_config, its values quoted once by escapeLiteral (scopeStatement)",
    },
  ],
  'src/warehouse/org-readers.ts': [{ exprs: ['role'], reason: 'GRANT/CREATE ROLE take no parameters: role is client.escapeIdentifier(readerRole), quoted a few lines above' }],
  'src/warehouse/worker-login.ts': [
    { exprs: ['role'], reason: "CREATE ROLE/GRANT take no parameters: role is client.escapeIdentifier(the URL's login)" },
    { exprs: ['secret'], reason: "CREATE ROLE … PASSWORD takes no parameter: a SCRAM verifier (never the password) through client.escapeLiteral, as psql's \\password sends it" },
  ],
};

interface SqlTextFinding {
  file: string;
  line: number;
  /** The interpolated expression, or `+` for a concatenation. */
  expr: string;
}

const CALL = /(?:\.query|\bsql\.raw|\bsql\.lit|\bexecute)\s*(?:<[^>()]*>)?\s*\(\s*/g;

/** A template literal starting at `text[start]` (a backtick): where it ends and its `${…}` expressions. */
function readTemplate(text: string, start: number): { end: number; parts: string[] } {
  const parts: string[] = [];
  let i = start + 1;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === '`') return { end: i + 1, parts };
    if (c === '$' && text[i + 1] === '{') {
      let depth = 1;
      let k = i + 2;
      const from = k;
      while (k < text.length && depth > 0) {
        const d = text[k]!;
        if (d === '`') {
          k = readTemplate(text, k).end;
          continue;
        }
        if (d === "'" || d === '"') {
          k++;
          while (k < text.length && text[k] !== d) k += text[k] === '\\' ? 2 : 1;
          k++;
          continue;
        }
        if (d === '{') depth++;
        if (d === '}') depth--;
        k++;
      }
      parts.push(text.slice(from, k - 1).trim());
      i = k;
      continue;
    }
    i++;
  }
  return { end: i, parts };
}

/** Every interpolation or concatenation in the SQL text of a query call of `text`. */
function sqlTextFindings(file: string, text: string): SqlTextFinding[] {
  const findings: SqlTextFinding[] = [];
  const lineOf = (at: number): number => text.slice(0, at).split('\n').length;
  for (const match of text.matchAll(CALL)) {
    const at = match.index + match[0].length;
    const first = text[at];
    if (first === '`') {
      const { end, parts } = readTemplate(text, at);
      for (const expr of parts) findings.push({ file, line: lineOf(at), expr });
      if (/^\s*\+/.test(text.slice(end))) findings.push({ file, line: lineOf(at), expr: '+' });
    } else if (first === "'" || first === '"') {
      let k = at + 1;
      while (k < text.length && text[k] !== first) k += text[k] === '\\' ? 2 : 1;
      if (/^\s*\+/.test(text.slice(k + 1))) findings.push({ file, line: lineOf(at), expr: '+' });
    } else if (/^[\w.]+\s*\+/.test(text.slice(at))) {
      findings.push({ file, line: lineOf(at), expr: '+' });
    }
  }
  return findings;
}

/** The findings that neither quote an identifier nor name a constant, nor are listed in ALLOWED. */
function disallowed(findings: readonly SqlTextFinding[], allowed: typeof ALLOWED = ALLOWED): SqlTextFinding[] {
  return findings.filter((f) => !QUOTING.test(f.expr) && !CONSTANT.test(f.expr) && !(allowed[f.file] ?? []).some((entry) => entry.exprs.includes(f.expr)));
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? tsFiles(full) : name.endsWith('.ts') ? [full] : [];
  });
}

const ALL = ['src', 'jobs'].flatMap((dir) => tsFiles(path.join(ROOT, dir))).flatMap((full) => sqlTextFindings(path.relative(ROOT, full).split(path.sep).join('/'), readFileSync(full, 'utf8')));

describe('SQL text is never built from values', () => {
  it('no query call of src/ or jobs/ interpolates or concatenates anything but quoted identifiers, constants and the listed exceptions', () => {
    expect(disallowed(ALL)).toEqual([]);
  });

  it('every listed exception is still in use (a stale one is removed with its reason)', () => {
    for (const [file, entries] of Object.entries(ALLOWED)) {
      for (const expr of entries.flatMap((e) => e.exprs)) expect(ALL.some((f) => f.file === file && f.expr === expr), `${file}: ${expr}`).toBe(true);
    }
  });

  it('catches a value spliced into a query, in each form, and lets quoting and parameters pass', () => {
    const snippet = [
      "await client.query(`select * from trainsync.feeds where org = '${value}'`);",
      "await pool.query('select * from training.courses where id = ' + id);",
      'await db.execute(`delete from x where a = ${a}`);',
      'const q = sql.raw(`select ${column} from t`);',
      'await client.query(text + " where org = $1", [org]);',
      'await client.query<{ n: number }>(\n  `select count(*) from t where name = ${input.name}`,\n);',
      // Allowed: an identifier quoted, a constant, parameters.
      'await client.query(`drop role ${client.escapeIdentifier(name)}`);',
      'await client.query(`select ${COLUMNS} from t where org = $1`, [org]);',
      "await client.query('select 1 from t where org = $1', [org]);",
      'const rows = await sql`select * from t where org = ${org}`.execute(db);',
    ].join('\n');
    const found = disallowed(sqlTextFindings('src/new-feature.ts', snippet));
    expect(found.map((f) => [f.line, f.expr])).toEqual([
      [1, 'value'],
      [2, '+'],
      [3, 'a'],
      [4, 'column'],
      [5, '+'],
      [7, 'input.name'],
    ]);
    // An exception listed for one file does not excuse the same expression in another.
    expect(disallowed(sqlTextFindings('src/elsewhere.ts', 'await client.query(`grant x to ${role}`);'))).toHaveLength(1);
  });
});
