import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { ConfigError, cronStepProblem, loadConfig } from '../src/config.ts';
import { describeUnknownVariables, unknownVariables } from '../src/lib/unknown-variables.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { cliEnv, runCli, stderrSaid } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { runInTerminal } from './helpers/terminal.ts';

const cronSettings = allJobs.flatMap((job) => (job.schedule ? [job.schedule.setting] : []));

describe('TRAINSYNC_* variables trainsync does not read', () => {
  it('are named, each with the nearest known name when one is close; a warning, never a refusal', () => {
    const config = loadConfig({ TRAINSYNC_CRON_RESLUTS: '0 3 * * *', TRAINSYNC_REQUEST_PER_SECOND: '5', TRAINSYNC_REDIS_URL: 'redis://x', TRAINSYNC_TOTALLY_NEW: '1', PATH: '/bin', HOME: '/root' }, { cronSettings });
    expect(config.unknownVariables).toEqual([
      { name: 'TRAINSYNC_CRON_RESLUTS', suggestion: 'TRAINSYNC_CRON_RESULTS' },
      { name: 'TRAINSYNC_REDIS_URL', suggestion: 'REDIS_URL' },
      { name: 'TRAINSYNC_REQUEST_PER_SECOND', suggestion: 'TRAINSYNC_REQUESTS_PER_SECOND' },
      { name: 'TRAINSYNC_TOTALLY_NEW' },
    ]);
    // Ignored: the schedule keeps its default, and the misspelt line is not even parsed.
    expect(config.cronLines).toEqual({});
    expect(loadConfig({ TRAINSYNC_CRON_RESLUTS: 'hourly' }, { cronSettings }).unknownVariables).toEqual([{ name: 'TRAINSYNC_CRON_RESLUTS', suggestion: 'TRAINSYNC_CRON_RESULTS' }]);
  });

  it('known ones are not flagged: the settings, every job schedule, docker-compose ports, and the variables an orgs file names', async () => {
    const known = Object.fromEntries(cronSettings.map((setting) => [setting, '0 4 * * *']));
    expect(loadConfig({ ...known, TRAINSYNC_RESULTS_LOOKBACK: 'P2W', TRAINSYNC_POSTGRES_PORT: '5433', TRAINSYNC_CRON_RECONCILE_FIX: '' }, { cronSettings }).unknownVariables).toEqual([]);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'trainsync-vars-'));
    try {
      const file = path.join(dir, 'orgs.json');
      await writeFile(file, JSON.stringify({ organisations: [{ slug: 'west', name: 'West', apiUrl: 'https://t.example', apiKey: { env: 'TRAINSYNC_WEST_KEY' } }] }));
      expect(loadConfig({ TRAINSYNC_ORGS_FILE: file, TRAINSYNC_WEST_KEY: 'k', TRAINSYNC_EAST_KEY: 'k' }, { cronSettings }).unknownVariables).toEqual([{ name: 'TRAINSYNC_EAST_KEY', suggestion: 'TRAINSYNC_WEST_KEY' }]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('without the jobs\' settings every TRAINSYNC_CRON_* line is taken as meant (and checked)', () => {
    expect(loadConfig({ TRAINSYNC_CRON_RESLUTS: '0 3 * * *' }).unknownVariables).toEqual([]);
    expect(() => loadConfig({ TRAINSYNC_CRON_RESLUTS: 'hourly' })).toThrow(ConfigError);
  });

  it('a known variable with a bad value is still refused, unknown ones or not', () => {
    expect(() => loadConfig({ TRAINSYNC_CRON_RESLUTS: '0 3 * * *', TRAINSYNC_REQUESTS_PER_SECOND: 'fast' }, { cronSettings })).toThrow(/TRAINSYNC_REQUESTS_PER_SECOND: got "fast"/);
  });

  it('one sentence names them all', () => {
    expect(describeUnknownVariables([{ name: 'TRAINSYNC_CRON_RESLUTS', suggestion: 'TRAINSYNC_CRON_RESULTS' }])).toBe('TRAINSYNC_CRON_RESLUTS is not a trainsync variable, so it is ignored: did you mean TRAINSYNC_CRON_RESULTS?');
    expect(describeUnknownVariables(unknownVariables(['TRAINSYNC_B', 'TRAINSYNC_A_KEY'], new Set(['TRAINSYNC_API_KEY'])))).toBe('TRAINSYNC_A_KEY (did you mean TRAINSYNC_API_KEY?) and TRAINSYNC_B are not trainsync variables, so they are ignored');
  });
});

describe('cron fields out of range', () => {
  it('a step larger than its field is refused, naming the field and the range allowed', () => {
    expect(cronStepProblem('*/61 * * * *')).toBe('minute field "*/61": step 61 is out of range; allowed 1-60');
    expect(cronStepProblem('0 */25 * * *')).toBe('hour field "*/25": step 25 is out of range; allowed 1-24');
    expect(cronStepProblem('0 0 1-31/40 * *')).toBe('day-of-month field "1-31/40": step 40 is out of range; allowed 1-31');
    expect(cronStepProblem('*/61 * * * * *')).toBe('second field "*/61": step 61 is out of range; allowed 1-60');
    expect(cronStepProblem('0 0 * */13 *')).toBe('month field "*/13": step 13 is out of range; allowed 1-12');
    expect(cronStepProblem('0 0 * * 1,*/8')).toBe('day-of-week field "1,*/8": step 8 is out of range; allowed 1-7');
    // Steps that fit, and lines without steps.
    for (const line of ['*/5 * * * *', '*/60 * * * *', '0 */24 * * *', '*/2 * * * * *', '0 2 * * *', '15 3 * * 1-5', '0 0 L * *']) expect(cronStepProblem(line), line).toBeUndefined();
  });

  it('loadConfig refuses it with the variable, the field and the range (the orgs file\'s cron lines too)', async () => {
    expect(() => loadConfig({ TRAINSYNC_CRON_RESULTS: '*/61 * * * *' }, { cronSettings })).toThrow(
      'TRAINSYNC_CRON_RESULTS: got "*/61 * * * *"; expected a valid cron line (minute field "*/61": step 61 is out of range; allowed 1-60), e.g. "0 2 * * *"',
    );
    const dir = await mkdtemp(path.join(os.tmpdir(), 'trainsync-cron-'));
    try {
      const file = path.join(dir, 'orgs.json');
      await writeFile(file, JSON.stringify({ organisations: [{ slug: 'west', name: 'West', apiUrl: 'https://t.example', apiKey: { env: 'WEST_KEY' }, cron: { SEATS: '*/90 * * * *' } }] }));
      expect(() => loadConfig({ TRAINSYNC_ORGS_FILE: file, WEST_KEY: 'k' }, { cronSettings })).toThrow(/cron\.SEATS: got "\*\/90 \* \* \* \*"; expected a valid cron line \(minute field "\*\/90": step 90 is out of range; allowed 1-60\)/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the commands, with a misspelt variable', () => {
  let sim: RunningSimulator;
  let database: TestDatabase;
  const prefix = testPrefix();
  const env = (): Record<string, string> => cliEnv({ sim, databaseUrl: database.url, prefix, redisUrl: REDIS_URL }, { TRAINSYNC_METRICS_PORT: '0', TRAINSYNC_SECRET_KEY: 'a'.repeat(64), TRAINSYNC_CRON_RESLUTS: '0 3 * * *' });

  beforeAll(async () => {
    sim = await startSimulator({ seed: 4 });
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await sim?.close();
    await database?.drop();
    await dropPrefix(prefix);
  });

  it('doctor warns (exit 0) with the nearest name and the fix, and no longer says every variable reads', async () => {
    const run = await runCli(['doctor'], env());
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/^warn {2}config {12}TRAINSYNC_CRON_RESLUTS is not a trainsync variable, so it is ignored: did you mean TRAINSYNC_CRON_RESULTS\?\n {24}fix: rename TRAINSYNC_CRON_RESLUTS to TRAINSYNC_CRON_RESULTS$/m);
    expect(run.stdout).toMatch(/^ok {4}config {12}every trainsync variable reads/m);
    expect(run.stdout).not.toContain('every variable reads');
    // doctor says it among its checks: no separate warning record.
    expect(run.stderr).not.toContain('RESLUTS');
  });

  it('another command prints one warning at start and runs: a JSON record off a terminal', async () => {
    const run = await runCli(['seats', '--json'], env());
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ applicable: true });
    const warnings = run.stderr.split('\n').filter((line) => line.includes('RESLUTS'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 40, msg: 'TRAINSYNC_CRON_RESLUTS is not a trainsync variable, so it is ignored: did you mean TRAINSYNC_CRON_RESULTS?' });
  });

  it('on a terminal, one WARN record before the output, wrapped under its message', async () => {
    const run = await runInTerminal(['seats'], env(), 90);
    expect(run.code, run.raw).toBe(0);
    expect(run.screen.slice(0, 2)).toEqual([
      expect.stringMatching(/^\d\d:\d\d:\d\d {2}WARN: TRAINSYNC_CRON_RESLUTS is not a trainsync variable, so it is ignored: did$/),
      `${' '.repeat(16)}you mean TRAINSYNC_CRON_RESULTS?`,
    ]);
    expect(run.screen.filter((line) => line.includes('RESLUTS'))).toHaveLength(1);
    expect(run.screen).toContainEqual(expect.stringMatching(/^seats in use: \d+$/));
  });

  it('a cron line out of range is refused at load: exit 2, naming the variable, the field and the range', async () => {
    const run = await runCli(['status'], { ...env(), TRAINSYNC_CRON_SEATS: '*/61 * * * *' });
    expect(run.code, run.stderr).toBe(2);
    expect(stderrSaid(run.stderr)).toContain('TRAINSYNC_CRON_SEATS: got "*/61 * * * *"; expected a valid cron line (minute field "*/61": step 61 is out of range; allowed 1-60)');
  });
});
