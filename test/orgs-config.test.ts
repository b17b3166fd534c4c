import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, MAX_DEFAULT_PROVISION_CONCURRENCY, MAX_DEFAULT_WORKER_CONCURRENCY, requirePlatform } from '../src/config.ts';
import { selectOneOrg, selectOrgs } from '../src/commands/options/org-option.ts';
import { UsageError } from '../src/commands/options/exit-codes.ts';
import { scheduleTable } from '../src/queue/schedulers.ts';
import { spreadCronLine, spreadOffsetMinutes } from '../src/queue/schedule-spread.ts';
import { createJobCatalog } from '../src/queue/catalog.ts';
import { allJobs } from '../jobs/index.ts';
import { budgetIdentity } from '../src/platform/client.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'trainsync-orgs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function orgsFile(name: string, content: unknown): string {
  const file = path.join(dir, name);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return [...(error as ConfigError).problems];
  }
  throw new Error('expected a ConfigError');
}

const two = {
  organisations: [
    { slug: 'north', name: 'North Ltd', apiUrl: 'https://t.example', apiKey: { env: 'NORTH_KEY' }, requestsPerSecond: 4, cron: { RESULTS: '30 3 * * *' }, reader: true },
    { slug: 'south-2', name: 'South', apiUrl: 'https://t.example', apiKey: { file: 'south.key' } },
  ],
};

describe('organisations', () => {
  it('without TRAINSYNC_ORGS_FILE, the variables describe one organisation named default', () => {
    const config = loadConfig({ TRAINSYNC_API_URL: 'https://t.example', TRAINSYNC_API_KEY: 'k1', TRAINSYNC_REQUESTS_PER_SECOND: '7', TRAINSYNC_CRON_USERS: '5 4 * * *' });
    expect(config.orgs).toHaveLength(1);
    expect(config.orgs[0]).toMatchObject({ slug: 'default', name: 'default', apiUrl: 'https://t.example', apiKey: 'k1', requestsPerSecond: 7, cronLines: { TRAINSYNC_CRON_USERS: '5 4 * * *' } });
    expect(selectOrgs(config, []).map((o) => o.slug)).toEqual(['default']);
    expect(requirePlatform(config)).toEqual({ apiUrl: 'https://t.example', apiKey: 'k1' });
  });

  it('reads a JSON file, resolving keys by variable name or file, with per-organisation budgets, cron lines and readers', () => {
    writeFileSync(path.join(dir, 'south.key'), 'k-south\n');
    const file = orgsFile('orgs.json', two);
    const config = loadConfig({ TRAINSYNC_ORGS_FILE: file, NORTH_KEY: 'k-north', TRAINSYNC_CRON_USERS: '5 4 * * *' });
    expect(config.orgs.map((o) => o.slug)).toEqual(['north', 'south-2']);
    const [north, south] = config.orgs;
    expect(north).toMatchObject({ name: 'North Ltd', apiKey: 'k-north', requestsPerSecond: 4, readerRole: 'trainsync_reader_north' });
    expect(north!.cronLines).toEqual({ TRAINSYNC_CRON_USERS: '5 4 * * *', TRAINSYNC_CRON_RESULTS: '30 3 * * *' });
    expect(south).toMatchObject({ apiKey: 'k-south', requestsPerSecond: 10 });
    expect(south!.readerRole).toBeUndefined();
    // Each organisation finds a free slot while the others run: the defaults grow with their number.
    expect(config.TRAINSYNC_WORKER_CONCURRENCY).toBe(5);
    expect(loadConfig({ TRAINSYNC_ORGS_FILE: file, NORTH_KEY: 'k-north', TRAINSYNC_WORKER_CONCURRENCY: '2' }).TRAINSYNC_WORKER_CONCURRENCY).toBe(2);
    // Each key its own budget in Redis, named by a digest: the key itself never appears.
    expect(budgetIdentity('https://t.example', 'k-north')).not.toBe(budgetIdentity('https://t.example', 'k-south'));
    expect(budgetIdentity('https://t.example', 'k-north')).not.toContain('k-north');
  });

  it('a thousand organisations: the default concurrency stops at its cap, and the pool size does not follow them', () => {
    const many = { organisations: Array.from({ length: 1_000 }, (_, i) => ({ slug: `org-${i}`, name: `Org ${i}`, apiUrl: 'https://t.example', apiKey: { env: 'ANY_KEY' } })) };
    const file = orgsFile('many.json', many);
    const config = loadConfig({ TRAINSYNC_ORGS_FILE: file, ANY_KEY: 'k' });
    expect(config.TRAINSYNC_WORKER_CONCURRENCY).toBe(MAX_DEFAULT_WORKER_CONCURRENCY);
    expect(config.TRAINSYNC_PROVISION_CONCURRENCY).toBe(MAX_DEFAULT_PROVISION_CONCURRENCY);
    expect(config.TRAINSYNC_PG_POOL_SIZE).toBe(10);
    expect(loadConfig({ TRAINSYNC_ORGS_FILE: file, ANY_KEY: 'k', TRAINSYNC_WORKER_CONCURRENCY: '400', TRAINSYNC_PG_POOL_SIZE: '20' })).toMatchObject({ TRAINSYNC_WORKER_CONCURRENCY: 400, TRAINSYNC_PG_POOL_SIZE: 20 });
    expect(() => loadConfig({ TRAINSYNC_PG_POOL_SIZE: '1' })).toThrow(/TRAINSYNC_PG_POOL_SIZE: got "1"; expected at least 2/);
    expect(() => loadConfig({ TRAINSYNC_LOCK_DATABASE_URL: 'localhost:5432' })).toThrow(/TRAINSYNC_LOCK_DATABASE_URL: got "localhost:5432"; expected a Postgres URL/);
  });

  it('reads the same file as YAML', () => {
    const file = orgsFile(
      'orgs.yaml',
      `organisations:
  - slug: north
    name: North Ltd
    apiUrl: https://t.example
    apiKey: { env: NORTH_KEY }
`,
    );
    expect(loadConfig({ TRAINSYNC_ORGS_FILE: file, NORTH_KEY: 'k' }).orgs.map((o) => o.slug)).toEqual(['north']);
  });

  it('names the file, the entry and the key of every problem, and never takes a key written in the file', () => {
    const file = orgsFile('bad.json', {
      organisations: [
        { slug: 'North', name: 'x', apiUrl: 'https://t.example', apiKey: { env: 'NORTH_KEY' } },
        { slug: 'east', name: 'East', apiUrl: 'ftp://t.example', apiKey: 'plain-text-key' },
        { slug: 'west', name: 'West', apiUrl: 'https://t.example', apiKey: { env: 'UNSET_KEY_VAR' }, cron: { RESULTS: 'hourly' } },
        { slug: 'west', name: 'West again', apiUrl: 'https://t.example', apiKey: { env: 'NORTH_KEY' }, color: 'red' },
      ],
    });
    const problems = problemsOf({ TRAINSYNC_ORGS_FILE: file, NORTH_KEY: 'k' });
    const text = problems.join('\n');
    expect(problems.every((p) => p.startsWith(`TRAINSYNC_ORGS_FILE: ${file}: organisations[`))).toBe(true);
    expect(text).toMatch(/organisations\[0\] \(North\): slug: lower-case letters/);
    expect(text).toMatch(/organisations\[1\] \(east\): apiUrl: an http\(s\) URL/);
    expect(text).toMatch(/organisations\[1\] \(east\): apiKey: a reference, \{"env": "VARIABLE_NAME"\}/);
    expect(text).toMatch(/organisations\[2\] \(west\): apiKey: the variable UNSET_KEY_VAR it names is not set/);
    expect(text).toMatch(/organisations\[2\] \(west\): cron\.RESULTS: got "hourly"; expected a cron line/);
    expect(text).toMatch(/organisations\[3\] \(west\): color: unknown key/);
    expect(text).not.toContain('plain-text-key');
  });

  it('refuses a file that is missing, not JSON, or lists no organisation', () => {
    expect(problemsOf({ TRAINSYNC_ORGS_FILE: path.join(dir, 'nope.json') })[0]).toMatch(/nope\.json: cannot be read \(ENOENT\)/);
    expect(problemsOf({ TRAINSYNC_ORGS_FILE: orgsFile('broken.json', '{"organisations": [') })[0]).toMatch(/broken\.json: is not valid JSON/);
    expect(problemsOf({ TRAINSYNC_ORGS_FILE: orgsFile('empty.json', { organisations: [] }) })[0]).toMatch(/at least one organisation/);
  });

  it('--org picks organisations: the only one by default, all, several, or a usage error naming the choices', () => {
    writeFileSync(path.join(dir, 'south.key'), 'k-south\n');
    const config = loadConfig({ TRAINSYNC_ORGS_FILE: orgsFile('orgs2.json', two), NORTH_KEY: 'k-north' });
    expect(() => selectOrgs(config, [])).toThrow(UsageError);
    expect(() => selectOrgs(config, [])).toThrow(/2 organisations are configured \(north, south-2\): name one with --org SLUG/);
    expect(selectOrgs(config, ['all']).map((o) => o.slug)).toEqual(['north', 'south-2']);
    expect(selectOrgs(config, ['south-2']).map((o) => o.slug)).toEqual(['south-2']);
    expect(() => selectOrgs(config, ['west'])).toThrow(/--org west: no such organisation; configured: north, south-2/);
    expect(() => selectOneOrg(config, ['all'])).toThrow(/one organisation at a time/);
    expect(() => requirePlatform(config)).toThrow(/name one with --org SLUG/);
  });

  it('registers a schedule per organisation, each with its own cron line and scheduler id', () => {
    writeFileSync(path.join(dir, 'south.key'), 'k-south\n');
    const config = loadConfig({ TRAINSYNC_ORGS_FILE: orgsFile('orgs3.json', two), NORTH_KEY: 'k-north' });
    const table = scheduleTable(createJobCatalog(allJobs), config);
    const results = table.filter((s) => s.job === 'sync-results');
    expect(results).toEqual([
      { id: 'north.sync-results', org: 'north', job: 'sync-results', queue: 'sync', pattern: '30 3 * * *', written: '30 3 * * *' },
      // Not its own line: the default, spread inside the 2 h window of several organisations.
      { id: 'south-2.sync-results', org: 'south-2', job: 'sync-results', queue: 'sync', pattern: spreadCronLine('0 2 * * *', spreadOffsetMinutes('south-2', 120)), written: '0 2 * * *' },
    ]);
    expect(results[1]!.pattern).not.toBe('0 2 * * *');
    // Every job of an organisation moves by the same offset: their order is kept.
    const southCourses = table.find((s) => s.id === 'south-2.sync-courses');
    expect(southCourses?.pattern).toBe(spreadCronLine('0 2 * * *', spreadOffsetMinutes('south-2', 120)));
    // No spread: as written.
    const unspread = scheduleTable(createJobCatalog(allJobs), loadConfig({ TRAINSYNC_ORGS_FILE: orgsFile('orgs3.json', two), NORTH_KEY: 'k-north', TRAINSYNC_SCHEDULE_SPREAD: '0' }));
    expect(unspread.find((s) => s.id === 'south-2.sync-results')?.pattern).toBe('0 2 * * *');
    // A single-organisation deployment keeps its scheduler ids.
    expect(scheduleTable(createJobCatalog(allJobs), loadConfig({})).find((s) => s.job === 'sync-results')?.id).toBe('sync-results');
  });
});
