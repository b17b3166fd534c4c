import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { cliEnv, runCli } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { renderScreen } from './helpers/screen.ts';
import { runInTerminal } from './helpers/terminal.ts';

/** What a person sees: `provision` of the example feed on an 80-column terminal, against the default simulator. */
describe('the terminal', () => {
  let sim: RunningSimulator;
  let database: TestDatabase;
  const prefix = testPrefix();
  const env = (): Record<string, string> => cliEnv({ sim, databaseUrl: database.url, prefix, redisUrl: REDIS_URL }, { TRAINSYNC_REQUESTS_PER_SECOND: '500' });

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

  it('provision examples/hr-feed.csv: a screen that fits 80 columns, one line per action kind, the reason last', async () => {
    const run = await runInTerminal(['provision', 'examples/hr-feed.csv'], env(), 80);
    expect(run.code, run.raw.slice(-2000)).toBe(1);
    const { screen } = run;
    // Before: 1,352 lines, 648 of them INFO records. Now the plan, four progress lines, the outcome.
    expect(screen.length).toBeGreaterThan(30);
    // (52 with 5 examples per action kind, and the last line wrapped at word boundaries rather than cut: 3 lines at 80 columns.)
    expect(screen.length).toBeLessThanOrEqual(55);
    for (const line of screen) expect([...line].length, line).toBeLessThanOrEqual(80);
    expect(screen.join('\n')).not.toMatch(/\bINFO\b/);
    // One live line per action kind, each finished.
    for (const [kind, total] of [['add-to-group', 313], ['enable', 1], ['disable', 3], ['create-user', 5]] as const) {
      expect(screen.filter((line) => line.startsWith(` ${kind} `))).toEqual([expect.stringMatching(new RegExp(`${total}/${total} actions {2}done$`))]);
    }
    expect(screen).toContainEqual(expect.stringMatching(/^│ create-user\s+│ 5\s+│ ada\.lovelace\.e000301@acme-training\.ex/));
    // The rejected row is the reason for exit 1, and it is said last, wrapped at word boundaries.
    const reasonAt = screen.findIndex((line) => /^trainsync: 1 row rejected \(hr-feed\.csv line 307/.test(line));
    expect(reasonAt, screen.join('\n')).toBeGreaterThan(0);
    expect(screen.slice(reasonAt + 1).every((line) => line.startsWith('  '))).toBe(true);
    expect(screen.slice(reasonAt).join(' ').replace(/\s+/g, ' ')).toContain('fix the value in the HR export or drop the row)');
  });

  it('not on a terminal, stderr is JSON lines only: progress is a log record too', async () => {
    const run = await runCli(['sync', 'courses'], { ...env(), LOG_LEVEL: 'info' });
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stderr.trim().split('\n');
    expect(lines.length).toBeGreaterThan(1);
    // Before: a plain `progress courses: pages 1 rows 40` line among the records.
    for (const line of lines) expect(JSON.parse(line), line).toMatchObject({ app: 'trainsync' });
    const progress = lines.map((line) => JSON.parse(line) as { msg: string; progress?: unknown }).filter((record) => record.progress !== undefined);
    expect(progress[0]).toMatchObject({ msg: expect.stringMatching(/^progress courses: pages \d+ rows \d+$/), progress: { resource: 'courses' } });
  });

  it('--dry-run prints the count of each action with 5 examples; --output writes every action to a file', async () => {
    // A database of its own: a first run (the one above applied the feed), so the plan has hundreds of actions.
    const fresh = await createTestDatabase();
    const env = (): Record<string, string> => cliEnv({ sim, databaseUrl: fresh.url, prefix, redisUrl: REDIS_URL }, { TRAINSYNC_REQUESTS_PER_SECOND: '500' });
    const dir = mkdtempSync(path.join(tmpdir(), 'trainsync-plan-'));
    try {
      const run = await runCli(['provision', 'examples/hr-feed.csv', '--dry-run'], env());
      expect(run.code).toBe(1);
      // One screen: no line per action; the table's examples stop at 5 with "… and N more".
      expect(run.stdout).not.toContain('Every action:');
      expect(run.stdout).toMatch(/│ +│ +│ … and \d+ more +│/);
      expect(run.stdout).toContain('dry run: nothing was enqueued (every action: --output FILE, .csv for CSV, else JSON Lines)');
      const planned = /unchanged\s+│ (\d+)/.exec(run.stdout);
      expect(planned).not.toBeNull();
      const file = path.join(dir, 'plan.jsonl');
      const written = await runCli(['provision', 'examples/hr-feed.csv', '--dry-run', '--output', file], env());
      expect(written.code).toBe(1);
      const json = await runCli(['provision', 'examples/hr-feed.csv', '--dry-run', '--json'], env());
      const plan = (JSON.parse(json.stdout) as { plan: { actions: Array<{ id: string }> } }).plan;
      const lines = readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => (JSON.parse(l) as { id: string }).id);
      expect(lines.length).toBeGreaterThan(300);
      expect(lines.sort()).toEqual(plan.actions.map((a) => a.id).sort());
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await fresh.drop();
    }
  });

  it('the screen model draws what a terminal draws (cursor up, erase, columns)', () => {
    expect(renderScreen('one\ntwo\n\x1b[2A\x1b[1GONE\x1b[0K\n')).toEqual(['ONE', 'two']);
    expect(renderScreen('abc\r\nxy\x1b[1Gz\x1b[0K')).toEqual(['abc', 'z']);
  });
});
