import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { cliEnv, runCli, startCli, stderrSaid } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { runInTerminal } from './helpers/terminal.ts';
import { waitFor } from './helpers/worker-process.ts';

/**
 * One exit code per cause, whatever the command (README, "Exit codes"): the platform
 * refusing the API key is the configuration's fault, 2 everywhere, said once; a bad
 * value on the command line is 2; a feed file that cannot be opened is 2, in one line.
 */
describe('exit codes per cause across commands', () => {
  let sim: RunningSimulator;
  let database: TestDatabase;
  let dir: string;
  const prefix = testPrefix();
  /** The simulator answers 401 UNAUTHORIZED to any key but its own. */
  const refused = (): Record<string, string> => cliEnv({ sim: { url: sim.url, apiKey: 'not-the-organisation-key' }, databaseUrl: database.url, prefix, redisUrl: REDIS_URL }, { TRAINSYNC_METRICS_PORT: '0' });
  const accepted = (): Record<string, string> => cliEnv({ sim, databaseUrl: database.url, prefix, redisUrl: REDIS_URL });

  beforeAll(async () => {
    sim = await startSimulator({ seed: 5 });
    database = await createTestDatabase();
    dir = await mkdtemp(path.join(os.tmpdir(), 'trainsync-refused-'));
    // reconcile --fix plans the HR snapshot: one to plan (load-feed needs no platform).
    const loaded = await runCli(['load-feed', 'examples/hr-feed.csv'], refused());
    expect(loaded.code, loaded.stderr).toBe(1);
  });
  afterAll(async () => {
    await sim?.close();
    await database?.drop();
    await dropPrefix(prefix);
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    { command: ['doctor'] },
    { command: ['sync', 'courses'] },
    { command: ['provision', 'examples/hr-feed.csv'] },
    { command: ['seats'] },
    { command: ['login-url', 'ann.smith@example.com', '3f2b8c1e-5d4a-4b7e-9c21-0a6f1e2d3c4b'] },
    { command: ['reconcile', '--fix'] },
  ].map((row) => ({ ...row, name: row.command.filter((arg) => !arg.includes('@') && !/^[0-9a-f-]{36}$/.test(arg)).join(' ') })))('$name with a refused key: exit 2 (configuration), the key named once', async ({ command }) => {
    const run = await runCli(command, refused());
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(2);
    expect(`${run.stdout}${run.stderr}`).toMatch(/refused/);
    expect(`${run.stdout}${run.stderr}`).toContain('TRAINSYNC_API_KEY');
    // For a person, one line says it (the JSON records are for machines).
    const said = [...run.stdout.split('\n'), ...stderrSaid(run.stderr).split('\n')].filter((line) => !line.startsWith('{') && /\b401\b|refused the key/.test(line));
    expect(said, run.stderr).toHaveLength(1);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('on a terminal, sync with a refused key says 401 on one line: no WARN or ERROR record repeats it', async () => {
    const run = await runInTerminal(['sync', 'courses'], refused(), 100);
    expect(run.code, run.raw.slice(-2000)).toBe(2);
    const mentions = run.screen.filter((line) => /\b401\b/.test(line));
    // Before: the request's WARN, the job's ERROR, the note under the table and the last line (16 lines at 120 columns).
    expect(mentions, run.screen.join('\n')).toHaveLength(1);
    expect(run.screen.join('\n')).not.toMatch(/\b(WARN|ERROR)\b/);
    expect(run.screen).toContainEqual(expect.stringMatching(/│ courses +│ FAILED +│.*│ key refused │$/));
    // Said last, whole: wrapped at word boundaries, continued with an indent.
    expect(run.screen.join('\n').replace(/\n {2}/g, ' ')).toMatch(/^trainsync: the platform refused the API key, so courses was not synced: GET \/api\/v2\/courses was refused with HTTP 401 .*; check TRAINSYNC_API_KEY: it must be the organisation's API key for this platform$/m);
  });

  it('login-url with a course name instead of its GUID: a bad value, exit 2, before the platform is asked', async () => {
    const before = sim.requests.length;
    const run = await runCli(['login-url', 'ann.smith@example.com', 'Fire Safety'], accepted());
    expect(run.code, run.stderr).toBe(2);
    expect(stderrSaid(run.stderr)).toMatch(/^trainsync: courseId "Fire Safety": expected the course's GUID, e\.g\. [0-9a-f-]{36}, not its name/);
    expect(sim.requests.length).toBe(before);
  });

  it('provision of a file that is not there: one line naming it and the fix, exit 2, no plan, nothing connected', async () => {
    const missing = path.join(dir, 'missing.csv');
    const before = sim.requests.length;
    // Redis and Postgres unreachable: the file is refused before either is needed.
    const run = await runCli(['provision', missing], { ...accepted(), REDIS_URL: 'redis://127.0.0.1:1', DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    expect(stderrSaid(run.stderr).trim().split('\n')).toEqual([`trainsync: cannot read the feed ${missing}: no such file; check the path (relative paths start at the current directory) or export the feed again; nothing was planned or changed`]);
    expect(sim.requests.length).toBe(before);
    // The same for load-feed (it read the file first already, in two lines).
    const load = await runCli(['load-feed', missing], accepted());
    expect(load.code).toBe(2);
    expect(load.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('Ctrl-C during a sync: the requests it aborts are no warnings, the last line says interrupted (exit 130)', async () => {
    // Every request waits 20 s: the sync is surely inside one when it is interrupted.
    await fetch(`${sim.url}/__simulator/faults`, { method: 'POST', body: JSON.stringify({ latencyMs: 20_000 }) });
    try {
      const before = sim.requests.length;
      const run = startCli(['sync', 'courses'], accepted());
      await waitFor(async () => (sim.requests.slice(before).some((r) => r.path === '/api/v2/courses') ? true : undefined), 30_000, 'the sync to ask for courses');
      run.kill('SIGINT');
      const done = await run.done;
      expect(done.code, done.stderr).toBe(130);
      const records = done.stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { level: number; msg: string; exitCode?: number });
      // Before: one WARN "platform request failed: … was aborted" per request in flight, then the message.
      // (The reason said last is a record too off a terminal: it carries the exit code.)
      expect(records.filter((r) => r.level >= 40 && r.exitCode === undefined)).toEqual([]);
      expect(stderrSaid(done.stderr).trim().split('\n').at(-1)).toMatch(/^trainsync: interrupted: /);
    } finally {
      await fetch(`${sim.url}/__simulator/faults`, { method: 'POST', body: JSON.stringify({ latencyMs: 0 }) });
    }
  });
});
