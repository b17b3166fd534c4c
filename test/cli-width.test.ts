import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fitTable } from '../src/commands/render/fit-table.ts';
import { wrapLines } from '../src/commands/render/terminal.ts';
import { lineWidth, outputWidth, wrapLine } from '../src/lib/text-width.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { cliEnv, runCli, type CliRun } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/** What a person reads: stdout, and stderr but its JSON log records (machine lines, whole by design). */
const personLines = (run: CliRun): string[] => [...run.stdout.split('\n'), ...run.stderr.split('\n').filter((line) => !line.startsWith('{'))];

/** The lines of `run` longer than `columns` (none, when everything fits). */
const tooLong = (run: CliRun, columns: number): string[] => personLines(run).filter((line) => [...line].length > columns);

describe('text fitted to a width', () => {
  it('the width: the terminal, else COLUMNS, else 100; at most 100; sentences wrap only when it is known', () => {
    expect(outputWidth({ isTTY: true, columns: 120 }, undefined)).toBe(100);
    expect(outputWidth({ isTTY: true, columns: 72 }, '130')).toBe(72);
    expect(outputWidth({ isTTY: false }, '80')).toBe(80);
    expect(outputWidth({ isTTY: false }, undefined)).toBe(100);
    expect(outputWidth({ isTTY: false }, 'wide')).toBe(100);
    expect(lineWidth({ isTTY: false }, undefined)).toBeUndefined();
    expect(lineWidth({ isTTY: false }, '')).toBeUndefined();
    expect(lineWidth({ isTTY: false }, '80')).toBe(80);
    expect(lineWidth({ isTTY: true, columns: 90 }, undefined)).toBe(90);
  });

  it('wraps at spaces with a hanging indent, and breaks a word longer than a line after . @ - rather than anywhere', () => {
    const line = 'row error: hr-feed.csv line 307, field email: "edsger.dijkstra-at-acme" is not an e-mail address; fix the value in the HR export or drop the row';
    const wrapped = wrapLine(line, 40);
    for (const piece of wrapped) expect(piece.length, piece).toBeLessThanOrEqual(40);
    expect(wrapped.slice(1).every((piece) => piece.startsWith('  ') && !piece.startsWith('   '))).toBe(true);
    // Nothing lost, no word cut: the words read back in order.
    expect(wrapped.join(' ').split(/\s+/).join(' ')).toBe(line);
    expect(wrapLine('    indented and long enough to wrap once', 24)).toEqual(['    indented and long', '      enough to wrap', '      once']);
    // A word too long for the rest of a line starts a line of its own, then breaks after a `.`, `@`, `-`.
    expect(wrapLine('x very.long.address@acme-training.example', 20, '  ')).toEqual(['x', '  very.long.address@', '  acme-training.', '  example']);
    // A drawn table is laid out already: left alone.
    expect(wrapLines(`│ ${'a '.repeat(40)}│`, 30)).toBe(`│ ${'a '.repeat(40)}│`);
  });

  it('fitTable fits the frame in the width: named columns give way in order, cells wrap (or are cut), nothing is cut by the terminal', () => {
    const head = ['line', 'employee_id', 'email', 'name', 'status'];
    const rows = [[2, 'E000001', 'george.murphy8@acme-training.example', 'Katherine Johnson-Smythe', 'inactive']];
    for (const width of [100, 80, 60, 44]) {
      const table = fitTable(head, rows, { width, flex: [1, 3, 2] });
      for (const line of table.split('\n')) expect([...line].length, `${width}: ${line}`).toBeLessThanOrEqual(width);
      // Wrapped, not cut: every character of the e-mail is still in the email column.
      const emailColumn = table.split('\n').flatMap((line) => (line.startsWith('│') ? [line.split('│')[3]!.trim()] : []));
      expect(emailColumn.join(''), `${width}`).toContain('george.murphy8@acme-training.example');
    }
    // Wide enough: the natural layout, one line per row.
    expect(fitTable(head, rows, { width: 100 }).split('\n')).toHaveLength(5);
    const cut = fitTable(['kind', 'note'], [['a', 'x'.repeat(200)]], { width: 40, cut: [1] });
    expect(cut).toContain('…');
    for (const line of cut.split('\n')) expect([...line].length).toBeLessThanOrEqual(40);
  });
});

describe('the commands fit COLUMNS (80 and 100)', () => {
  let sim: RunningSimulator;
  let database: TestDatabase;
  const prefix = testPrefix();
  const env = (columns: number): Record<string, string> => cliEnv({ sim, databaseUrl: database.url, prefix, redisUrl: REDIS_URL }, { TRAINSYNC_REQUESTS_PER_SECOND: '500', TRAINSYNC_METRICS_PORT: '0', COLUMNS: String(columns) });

  beforeAll(async () => {
    // The data `trainsync simulator` serves by default, which examples/hr-feed.csv was made for.
    sim = await startSimulator({});
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await sim?.close();
    await database?.drop();
    await dropPrefix(prefix);
  });

  it.each([80, 100])('feed check examples/hr-feed.csv at COLUMNS=%i: every line fits; attributes listed whole under the table', async (columns) => {
    // No services: feed check reads the file only.
    const run = await runCli(['feed', 'check', 'examples/hr-feed.csv'], { COLUMNS: String(columns) });
    expect(run.code, run.stderr).toBe(1);
    expect(tooLong(run, columns)).toEqual([]);
    expect(run.stdout).toMatch(/^│ line /m);
    expect(run.stdout).toContain('  line 2: department=Engineering; location=Dublin');
    expect(run.stdout).toMatch(/row error: hr-feed\.csv line 307, field email: "edsger\.dijkstra-at-acme" is not\s+an e-mail address;/);
  });

  it.each([80, 100])('doctor at COLUMNS=%i: every line fits, a long detail continues under itself', async (columns) => {
    const run = await runCli(['doctor'], env(columns));
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(tooLong(run, columns)).toEqual([]);
    // The postgres line (URL and server version) is longer than 80: its continuation starts under the detail.
    if (columns === 80) expect(run.stdout).toMatch(/^ok {4}postgres {10}reachable at.*\n {24}\S/m);
  });

  it.each([80, 100])('provision --dry-run at COLUMNS=%i: the plan, its examples and the reason fit', async (columns) => {
    const run = await runCli(['provision', 'examples/hr-feed.csv', '--dry-run'], env(columns));
    expect(run.code, run.stderr).toBe(1);
    expect(tooLong(run, columns)).toEqual([]);
    expect(run.stdout).toContain('dry run: nothing was enqueued');
    expect(run.stdout).toMatch(/^│ create-user +│ 5 +│ /m);
  });

  it.each([80, 100])('reconcile --fix --dry-run at COLUMNS=%i: every line fits', async (columns) => {
    // reconcile --fix plans the employees trainsync has applied: apply the feed once.
    if (columns === 80) {
      const applied = await runCli(['provision', 'examples/hr-feed.csv'], env(100));
      expect(applied.code, applied.stderr).toBe(1);
    }
    const run = await runCli(['reconcile', '--fix', '--dry-run'], env(columns));
    expect(run.code, run.stderr).toBe(0);
    expect(tooLong(run, columns)).toEqual([]);
    expect(run.stdout).toMatch(/^reconcile --fix: 305 employees of training\.employees that trainsync has applied,/m);
    expect(run.stdout).toContain('dry run: nothing was enqueued');
  });
});
