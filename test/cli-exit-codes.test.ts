import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allJobs } from '../jobs/index.ts';
import { buildProgram } from '../src/commands/program.ts';
import { createLogger } from '../src/runtime/log.ts';
import { runCli, stderrSaid } from './helpers/cli.ts';
import { ADMIN_URL, createTestDatabase, databaseUrl, type TestDatabase } from './helpers/db.ts';
import { freePort } from './helpers/own-services.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';

/**
 * One exit-code table for every command (README, "Exit codes"): 0 ok, 1 rows rejected or
 * actions failed, 2 usage or configuration refused, 3 incomplete, 130 interrupted.
 */
describe('exit codes, the same table for every command', () => {
  let dir: string;
  let database: TestDatabase;
  const prefix = testPrefix();
  const missingDb = `trainsync_never_${randomBytes(4).toString('hex')}`;
  let closedPort: number;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'trainsync-exit-'));
    await writeFile(path.join(dir, 'header-only.csv'), 'employee_id,email,first_name,last_name,status\n');
    await writeFile(path.join(dir, 'good.csv'), 'employee_id,email,first_name,last_name,status\nE1,e1@example.com,Ada,Lovelace,active\n');
    database = await createTestDatabase();
    closedPort = await freePort();
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await database?.drop();
    await dropPrefix(prefix);
  });

  const services = (): Record<string, string> => ({ DATABASE_URL: database.url, TRAINSYNC_OWNER_DATABASE_URL: database.ownerUrl, REDIS_URL, TRAINSYNC_QUEUE_PREFIX: prefix });
  const platform = { TRAINSYNC_API_URL: 'http://127.0.0.1:9', TRAINSYNC_API_KEY: 'k' };

  interface Row {
    what: string;
    args: () => string[];
    env?: () => Record<string, string>;
    code: number;
    /** Said on stderr (or stdout for help). */
    says?: RegExp;
  }
  const rows: Row[] = [
    { what: 'an unknown option', args: () => ['sync', '--bogus'], code: 2, says: /unknown option '--bogus'/ },
    { what: 'an unknown command', args: () => ['synk'], code: 2, says: /unknown command 'synk'/ },
    { what: 'an unknown resource', args: () => ['sync', 'coursez'], env: () => ({ ...services(), ...platform }), code: 2, says: /unknown resource "coursez"/ },
    { what: 'a word for a date', args: () => ['sync', 'results', '--since', 'yesterday'], env: () => ({ ...services(), ...platform }), code: 2, says: /--since yesterday: expected a date that exists/ },
    { what: 'an impossible date', args: () => ['sync', 'results', '--since', '2024-02-30'], env: () => ({ ...services(), ...platform }), code: 2, says: /--since 2024-02-30: expected a date that exists/ },
    { what: 'an impossible date for the simulator', args: () => ['simulator', '--from', '2024-02-30'], code: 2, says: /expected a date that exists/ },
    { what: 'a bad value for an option', args: () => ['feed', 'check', path.join(dir, 'good.csv'), '--format', 'xml'], code: 2, says: /expected csv or jsonl/ },
    { what: 'a bad cron line, named', args: () => ['worker'], env: () => ({ ...services(), TRAINSYNC_CRON_SEATS: '61 * * * *' }), code: 2, says: /TRAINSYNC_CRON_SEATS: got "61 \* \* \* \*"; expected a valid cron line \(Constraint error/ },
    { what: 'an impossible epoch date, named', args: () => ['status'], env: () => ({ ...services(), TRAINSYNC_RESULTS_EPOCH: '2015-02-29' }), code: 2, says: /TRAINSYNC_RESULTS_EPOCH/ },
    { what: 'a missing platform setting', args: () => ['provision', path.join(dir, 'good.csv')], env: () => services(), code: 2, says: /TRAINSYNC_API_URL: missing/ },
    { what: 'status on a missing database', args: () => ['status'], env: () => ({ ...services(), DATABASE_URL: databaseUrl(missingDb) }), code: 2, says: /run `trainsync migrate` first/ },
    { what: 'reconcile on a missing database', args: () => ['reconcile'], env: () => ({ ...services(), DATABASE_URL: databaseUrl(missingDb) }), code: 2, says: /run `trainsync migrate` first/ },
    { what: 'cancel of nothing', args: () => ['cancel', 'results'], env: () => services(), code: 2, says: /no sync of results is queued or running/ },
    { what: 'rows rejected', args: () => ['feed', 'check', 'examples/hr-feed.csv'], code: 1, says: /line 307/ },
    { what: 'a refused Redis (a service failed)', args: () => ['status'], env: () => ({ ...services(), REDIS_URL: `redis://:pw@127.0.0.1:${closedPort}` }), code: 1, says: /REDIS_URL.*docker compose up -d postgres redis/ },
    { what: 'a header-only feed: ok, with a warning', args: () => ['feed', 'check', path.join(dir, 'header-only.csv')], code: 0, says: /no rows/ },
    { what: '--version', args: () => ['--version'], code: 0, says: /\d+\.\d+\.\d+/ },
  ];

  it.each(rows)('$what: exit $code', async (row) => {
    const run = await runCli(row.args(), row.env?.() ?? {});
    expect(run.code, run.stderr).toBe(row.code);
    if (row.says) expect(`${stderrSaid(run.stderr)}${run.stdout}`).toMatch(row.says);
    // No stack trace for anything a person can act on.
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('status on a missing database creates nothing', async () => {
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    try {
      expect((await admin.query('select 1 from pg_database where datname = $1', [missingDb])).rowCount).toBe(0);
    } finally {
      await admin.end();
    }
  });

  it('every command lists the exit-code table under --help', async () => {
    const top = await runCli(['--help'], {});
    const commands = [...top.stdout.matchAll(/^ {2}([a-z-]+)(?: \[options\])?/gm)].map((m) => m[1]!).filter((c) => c !== 'help' && !c.startsWith('-'));
    expect(commands).toEqual(expect.arrayContaining(['sync', 'status', 'doctor', 'cancel', 'worker', 'provision']));
    const all = [...commands.map((c) => [c]), ['feed', 'check']];
    // A command's help as the binary prints it, once; every command's (the top-level list's
    // and feed check) from the program src/cli.ts builds, in this process: a process each
    // would cost a start-up apiece for the same text.
    const sync = await runCli(['sync', '--help'], {});
    expect(sync.code).toBe(0);
    expect(sync.stdout).toBe(await helpOf(['sync']));
    const helps = await Promise.all(all.map((command) => helpOf(command)));
    expect(helps.length).toBeGreaterThan(15);
    helps.forEach((help, i) => {
      const command = all[i]!.join(' ');
      expect(help, command).toMatch(/Exit codes \(the same for every command\):\n {2}0 {4}ok\n {2}1 .*\n {2}2 {4}refused/);
      expect(help, command).toMatch(/130 {2}interrupted/);
    });
  });
});

/** What `trainsync <command…> --help` prints, from the program as src/cli.ts builds it (help reads no configuration). */
async function helpOf(command: readonly string[]): Promise<string> {
  const program = buildProgram({
    loadConfig: () => {
      throw new Error('--help must not read configuration');
    },
    createLogger: () => createLogger({ level: 'silent' }),
    jobs: allJobs,
    env: {},
  });
  let out = '';
  const everyCommand = (c: Command): Command[] => [c, ...c.commands.flatMap(everyCommand)];
  for (const c of everyCommand(program)) c.configureOutput({ writeOut: (text) => (out += text), writeErr: (text) => (out += text) });
  // Help ends in commander's exit, which exitOverride turns into this error.
  await expect(program.parseAsync(['node', 'trainsync', ...command, '--help'])).rejects.toMatchObject({ code: 'commander.helpDisplayed', exitCode: 0 });
  return out;
}
