import { basename } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feedCheckReport } from '../src/commands/render/feed-check-report.ts';
import { readFeed, readFeedSummary } from '../src/provisioning/feed/read.ts';
import { checkRecord } from '../src/provisioning/feed/row.ts';
import { planProvisioning } from '../src/provisioning/plan/plan.ts';
import { startSimulator, writeCallCount, type RunningSimulator } from '../src/simulator/index.ts';
import { cliEnv, runCli, type CliRun } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { feedDir } from './helpers/hr-feed.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { runInTerminal, type TerminalRun } from './helpers/terminal.ts';

const HEADER = 'employee_id,email,first_name,last_name,status,groups,role,organisation_identifier,department,location';
const guid = (n: number): string => `${n.toString(16).padStart(8, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const NAMES = ['Quinn', 'Wen', 'Ben', 'Kofi', 'Aoife', 'Priya'];

/** Row i of a generated feed: repeated names, group lists and departments, as a real export has. */
function line(i: number): string {
  const id = `GOOD-${String(i).padStart(6, '0')}`;
  const groups = [...new Set([guid(1 + (i % 7)), guid(1 + ((i * 3) % 7))])].sort().join(';');
  return `${id},${id.toLowerCase()}@acme-training.example,${NAMES[i % 6]},${NAMES[(i * 5) % 6]}son,${i % 13 === 0 ? 'terminated' : 'active'},${groups},${i % 40 === 0 ? 'ADMIN' : 'USER'},${i % 9 === 0 ? `ORG-${i}` : ''},Dept ${i % 5},Site ${i % 3}`;
}

const files = feedDir();
afterAll(() => files.cleanup());

describe('a large feed', () => {
  // 6,000 rows (many chunks of the reader, far more than are shown), with a few bad rows and,
  // early on, duplicates whose partner comes much later: the rows `feed check` shows then come
  // from a second pass.
  const lines = Array.from({ length: 6_000 }, (_, i) => line(i));
  lines[2] = lines[2]!.replace('GOOD-000002,', 'GOOD-005000,');
  lines[7] = lines[7]!.replace('@acme-training.example', '@@broken');
  lines[3_456] = 'only,three,values';
  const file = files.write('big.csv', `${HEADER}\n${lines.join('\n')}\n`);

  it('feed check (first rows held, the rest counted) reports what the whole read reports', async () => {
    const [whole, summary] = await Promise.all([readFeed(file), readFeedSummary(file, {}, 10)]);
    expect(summary.rows).toHaveLength(10);
    // Rows of line 4 (and 5,002) are out as duplicates: the tenth row shown is line 12.
    expect(summary.rows.map((r) => r.line)).toEqual([2, 3, 5, 6, 7, 8, 10, 11, 12, 13]);
    expect(feedCheckReport(summary, { file, rows: 10 })).toEqual(feedCheckReport(whole, { file, rows: 10 }));
    const report = feedCheckReport(summary, { file, rows: 10 });
    expect(report.counts).toMatchObject({ records: 6_000, valid: 5_996, rejected: 4 });
  });

  it('reads every row as the row check alone does (values shared between rows change nothing)', async () => {
    const whole = await readFeed(file);
    const bad = new Set([2, 7, 3_456, 5_000]);
    const expected = lines.flatMap((text, i) => {
      if (bad.has(i)) return [];
      const v = text.split(',');
      const record = Object.fromEntries(['employee_id', 'email', 'first_name', 'last_name', 'status', 'groups', 'role', 'organisation_identifier'].map((f, k) => [f, v[k]]));
      const checked = checkRecord(record);
      if (!checked.ok) throw new Error(`line ${i + 2} should be valid`);
      return [{ line: i + 2, ...checked.row, attributes: { department: v[8], location: v[9] } }];
    });
    expect([...whole.rows]).toEqual(expected);
    const plan = planProvisioning({ ...whole, applied: [], mode: 'full', options: { force: true }, file: 'big.csv' });
    const active = expected.filter((r) => r.status === 'active');
    expect(plan.counts['create-user']).toBe(active.length);
    expect(plan.counts['add-to-group']).toBe(active.reduce((n, r) => n + r.groups.length, 0));
  });
});

describe('a JSON Lines feed', () => {
  it('feed check reports what the whole read reports, duplicates and bad lines included', async () => {
    const objects = Array.from({ length: 2_000 }, (_, i) => {
      const v = line(i).split(',');
      return JSON.stringify({ employee_id: v[0], email: v[1], first_name: v[2], last_name: v[3], status: v[4], groups: v[5], role: v[6], department: v[8] });
    });
    objects[1] = objects[1]!.replace('GOOD-000001"', 'GOOD-001500"');
    objects[4] = '{"employee_id": "GOOD-000004", "email": ';
    const file = files.write('big.jsonl', `${objects.join('\n')}\n`);
    const [whole, summary] = await Promise.all([readFeed(file), readFeedSummary(file, {}, 5)]);
    expect(summary.rows.map((r) => r.line)).toEqual([1, 3, 4, 6, 7]);
    expect(feedCheckReport(summary, { file, rows: 5 })).toEqual(feedCheckReport(whole, { file, rows: 5 }));
  });
});

describe('progress of a feed read', () => {
  // Over 1 MB: smaller files read too fast to need a line.
  const file = files.write('progress.csv', `${HEADER}\n${Array.from({ length: 9_000 }, (_, i) => line(i)).join('\n')}\n`);
  const small = files.write('small.csv', `${HEADER}\n${Array.from({ length: 100 }, (_, i) => line(i)).join('\n')}\n`);
  // The three reads side by side: each its own process.
  let runs: Promise<[TerminalRun, TerminalRun, CliRun]>;
  beforeAll(() => {
    runs = Promise.all([runInTerminal(['feed', 'check', file, '--rows', '1'], {}, 100), runInTerminal(['feed', 'check', small, '--rows', '1'], {}, 100), runCli(['feed', 'check', file, '--rows', '1'], {})]);
  });

  it('shows on a terminal (stderr), and finishes', async () => {
    const [run, quick] = await runs;
    expect(run.code, run.raw.slice(-1500)).toBe(0);
    expect(run.screen.filter((l) => l.startsWith(' reading feed'))).toEqual([expect.stringMatching(/2\/2 MB {2}9,000 rows {2}done$/)]);
    expect(run.screen.join('\n')).toContain('records: 9000; valid: 9000');
    expect(quick.code).toBe(0);
    expect(quick.raw).not.toContain('reading feed');
  });

  it('says nothing off a terminal', async () => {
    const [, , run] = await runs;
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).not.toContain('reading feed');
    expect(run.stdout).not.toMatch(/\u001b/);
  });
});

describe('hostile feed rows', () => {
  const FIELDS = ['employee_id', 'email', 'first_name', 'last_name', 'status', 'groups', 'role', 'organisation_identifier', 'department', 'location'];
  const quoted = (value: string): string => `"${value.replace(/"/g, '""')}"`;
  const hostile = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.constantFrom('', ' ', '"', '""', ',', ';', '\n', '\r\n', '\u0000', '\u202e', '=cmd|/c calc', '__proto__', 'constructor', '😀', 'E'.repeat(500)),
  );

  it('one bad row fails alone, named by file, line and field with the fix; never a crash', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 30 }), fc.constantFrom(...FIELDS), hostile, fc.boolean(), async (at, field, value, raw) => {
        const good = Array.from({ length: 30 }, (_, i) => line(i));
        const cells = line(1_000).split(',');
        cells[FIELDS.indexOf(field)] = raw ? value : quoted(value);
        const rows = [...good.slice(0, at), cells.join(','), ...good.slice(at)];
        const file = files.write('hostile.csv', `${HEADER}\n${rows.join('\n')}\n`);
        const name = basename(file);
        const [feed, summary] = await Promise.all([readFeed(file), readFeedSummary(file, {}, 5)]);
        expect(feedCheckReport(summary, { file, rows: 5 })).toEqual(feedCheckReport(feed, { file, rows: 5 }));
        for (const message of feed.fileErrors) expect(message).toMatch(new RegExp(`${name.replace('.', '\\.')}( line \\d+| is empty)`));
        for (const e of feed.errors) {
          expect(e.file).toBe(name);
          expect(e.message.startsWith(`${name} line ${e.line}`)).toBe(true);
          expect(e.message).toMatch(/fix|keep one row/);
          if (e.code === 'invalid-value') expect(e.field).toBeDefined();
        }
        if (feed.fileErrors.length === 0) {
          // Every good row is read, whatever the hostile one did; only it may be rejected.
          const ids = new Set(feed.rows.map((r) => r.employeeId));
          for (let i = 0; i < 30; i += 1) expect(ids.has(`GOOD-${String(i).padStart(6, '0')}`)).toBe(true);
          if (!raw) for (const e of feed.errors) expect(e.line).toBe(at + 2);
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe('more creates than free seats', () => {
  let sim: RunningSimulator;
  let database: TestDatabase;
  const prefix = testPrefix();
  beforeAll(async () => {
    [sim, database] = await Promise.all([startSimulator({ seed: 31, sizes: { users: 5, groups: 1, courses: 1, results: 1 } }), createTestDatabase()]);
  });
  afterAll(async () => {
    await Promise.all([sim?.close(), database?.drop(), dropPrefix(prefix)]);
  });

  it('a dry run says so on its first line, and is refused', async () => {
    const free = sim.state.seats.totalSeats - sim.state.users.filter((u) => u.hasAccess).length;
    const joiners = Array.from({ length: free + 20 }, (_, i) => line(i).replace(/,terminated,/, ',active,'));
    const file = files.write('joiners.csv', `${HEADER}\n${joiners.join('\n')}\n`);
    sim.resetRequests();
    const run = await runCli(['provision', file, '--dry-run', '--mode', 'delta'], cliEnv({ sim, databaseUrl: database.url, prefix, redisUrl: REDIS_URL }, { TRAINSYNC_REQUESTS_PER_SECOND: '500', LOG_LEVEL: 'warn' }));
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout.split('\n')[0]).toBe(
      `NOT ENOUGH SEATS: the plan needs ${free + 20} seats (${free + 20} new accounts, 0 re-enabled) but only ${free} are free; refused, nothing is enqueued: free seats or buy more on the platform, then rerun (or --force)`,
    );
    expect(writeCallCount(sim.requests)).toBe(0);
  });
});
