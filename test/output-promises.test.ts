import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fitTable } from '../src/commands/render/fit-table.ts';
import { formatPlanTable } from '../src/commands/render/plan-format.ts';
import { fitText, stderrRecord } from '../src/commands/render/terminal.ts';
import { PlanActions } from '../src/provisioning/plan/plan-actions.ts';
import { ACTION_KINDS, type Plan, type PlannedAction } from '../src/provisioning/plan/types.ts';
import { startSimulator, type RunningSimulator } from '../src/simulator/index.ts';
import { cliEnv, runCli, startCli, type CliRun } from './helpers/cli.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { feedDir } from './helpers/hr-feed.ts';
import { freePort } from './helpers/own-services.ts';
import { dropPrefix, REDIS_URL, testPrefix } from './helpers/redis.ts';
import { runInTerminal, startInTerminal } from './helpers/terminal.ts';
import { renderScreen } from './helpers/screen.ts';
import { startWorkerProcess, waitFor, type WorkerProcess } from './helpers/worker-process.ts';

const width = (line: string): number => [...line].length;

/** Every line of piped stderr as the JSON record it must be (a line that is not JSON fails here, naming it). */
function records(stderr: string): Array<{ level: number; msg: string; exitCode?: number }> {
  return stderr
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as { level: number; msg: string; exitCode?: number };
      } catch {
        throw new Error(`a stderr line that is not JSON: ${line}`);
      }
    });
}

/** A plan of arbitrary (hostile) e-mails and counts, for the width property. */
function planOf(emails: string[], counts: number[]): Plan {
  const actions = PlanActions.of(emails.map((email, i) => ({ kind: ACTION_KINDS[i % ACTION_KINDS.length]!, email, employeeId: `E${i}`, id: `a${i}` }) as PlannedAction));
  return {
    mode: 'full',
    activeCount: counts[0] ?? 0,
    maxDisable: counts[1] ?? 5,
    platform: `platform state: ${emails.join(' ')}`,
    actions,
    counts: Object.fromEntries(ACTION_KINDS.map((k, i) => [k, counts[i] ?? 0])),
    unchanged: counts[2] ?? 0,
    unsupported: [],
    errors: [],
    notes: [],
    drift: [],
  } as unknown as Plan;
}

describe('fitted to any terminal width (40 to 200 columns)', () => {
  const cell = fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: fc.constantFrom('a', ' ', '.', '@', '-', '\n', 'é', '→'), maxLength: 120 }), fc.integer(), fc.constant(null));

  it('a table is never wider than the width, whatever its cells', () => {
    fc.assert(
      fc.property(fc.integer({ min: 40, max: 200 }), fc.integer({ min: 1, max: 6 }), fc.array(fc.array(cell, { minLength: 6, maxLength: 6 }), { maxLength: 6 }), (columns, n, rows) => {
        const head = ['a', 'bb', 'column', 'd', 'examples', 'f'].slice(0, n);
        const drawn = fitTable(head, rows.map((r) => r.slice(0, n)), { width: columns, flex: [n - 1] });
        for (const line of drawn.split('\n')) expect(width(line), line).toBeLessThanOrEqual(columns);
      }),
    );
  });

  it('a sentence is never wider than the width, and no word is lost', () => {
    fc.assert(
      fc.property(fc.integer({ min: 40, max: 200 }), fc.array(fc.string({ unit: fc.constantFrom('x', 'y', '.', '@', '-', '/'), minLength: 1, maxLength: 250 }), { maxLength: 40 }), (columns, words) => {
        const text = words.join(' ');
        const fitted = fitText(text, columns);
        for (const line of fitted.split('\n')) expect(width(line), line).toBeLessThanOrEqual(columns);
        expect(fitted.replace(/\s+/g, '')).toBe(text.replace(/\s+/g, ''));
      }),
    );
  });

  it('the plan table is never wider than the width, whatever the e-mails', () => {
    fc.assert(
      fc.property(fc.integer({ min: 40, max: 200 }), fc.array(fc.string({ maxLength: 150 }), { maxLength: 12 }), fc.array(fc.nat({ max: 10_000_000 }), { maxLength: 6 }), (columns, emails, counts) => {
        const text = formatPlanTable(planOf(emails, counts), { width: columns });
        for (const line of text.split('\n').filter((l) => /^[│┌├└]/.test(l))) expect(width(line), line).toBeLessThanOrEqual(columns);
      }),
    );
  });

  it('off a terminal, the reason said last is one JSON line whatever its text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), fc.oneof(fc.constant(undefined), fc.integer({ min: 0, max: 255 })), (text, code) => {
        const line = stderrRecord(text, code, 0);
        expect(line).not.toContain('\n');
        expect(JSON.parse(line)).toEqual({ level: 50, time: 0, app: 'trainsync', ...(code === undefined ? {} : { exitCode: code }), msg: text });
      }),
    );
  });
});

describe('the CLI keeps its promises', () => {
  let sim: RunningSimulator;
  let database: TestDatabase;
  let demoDatabases: TestDatabase[] = [];
  let files: ReturnType<typeof feedDir>;
  const prefix = testPrefix();
  const workers: WorkerProcess[] = [];
  const env = (more: Record<string, string> = {}): Record<string, string> =>
    cliEnv({ sim, databaseUrl: database.url, prefix, redisUrl: REDIS_URL }, { TRAINSYNC_REQUESTS_PER_SECOND: '500', ...more });

  beforeAll(async () => {
    [sim, database, ...demoDatabases] = await Promise.all([startSimulator({ seed: 3, sizes: { users: 20, courses: 6, results: 20, groups: 2 } }), createTestDatabase(), createTestDatabase(), createTestDatabase()]);
    files = feedDir();
  });
  afterAll(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await Promise.all([sim?.close(), database?.drop(), ...demoDatabases.map((d) => d.drop()), dropPrefix(prefix)]);
    files?.cleanup();
  });

  it('the demo fits a 100-column terminal and an 80-column one', async () => {
    // A budget far above the demo's 50 requests a second: the same output, sooner (its header says the budget).
    const demoEnv = (i: number) => ({ DATABASE_URL: demoDatabases[i]!.url, TRAINSYNC_OWNER_DATABASE_URL: demoDatabases[i]!.ownerUrl, REDIS_URL, TRAINSYNC_REQUESTS_PER_SECOND: '2000' });
    const runs = await Promise.all(([100, 80] as const).map(async (columns, i) => ({ columns, run: await runInTerminal(['demo'], demoEnv(i), columns) })));
    for (const { columns, run } of runs) {
      expect(run.code, run.screen.join('\n')).toBe(0);
      expect(run.screen.join('\n')).toMatch(/All done in/);
      // Before: tables 102 and 119 wide, sentences of 162 columns, on a 100-column terminal.
      const wide = run.screen.filter((line) => width(line) > columns);
      expect(wide, `${columns} columns`).toEqual([]);
      // The screen a terminal shows wraps what is too long; what the demo wrote must fit on its own.
      const written = run.raw.replace(/\r/g, '').split('\n').map((line) => line.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, ''));
      expect(written.filter((line) => width(line) > columns)).toEqual([]);
    }
  }, 180_000);

  it('a feed missing a column is refused once: the feed error, no plan table, the reason last', async () => {
    const file = files.write('no-email.csv', 'employee_id,first_name,last_name\nE1,Ann,Lee\n');
    // On a terminal and piped, side by side.
    const [terminal, piped] = await Promise.all([runInTerminal(['provision', file, '--dry-run'], env(), 100), runCli(['provision', file, '--dry-run'], env())]);
    const screen = terminal.screen.join('\n');
    expect(terminal.code, screen).toBe(2);
    // Before: said three times (feed error, the seats note's reason, REFUSED), around an all-zero table headed "Plan".
    expect(screen.match(/the header has no column for email/g), screen).toHaveLength(1);
    expect(screen).not.toMatch(/Plan \(|│ action|REFUSED|seats/);
    expect(terminal.screen.filter((line) => line.trim() !== '').at(-1)).toMatch(/^ *trainsync: refused, nothing was enqueued: the feed file cannot be read|fix it\)$/);
    // Piped, the same: once on stdout, the reason a JSON record.
    expect(piped.code).toBe(2);
    expect(piped.stdout.match(/the header has no column for email/g)).toHaveLength(1);
    expect(piped.stdout).not.toMatch(/Plan \(|│ action|REFUSED/);
    expect(records(piped.stderr).at(-1)).toMatchObject({ exitCode: 2, msg: expect.stringMatching(/^trainsync: refused, nothing was enqueued: the feed file cannot be read/) });
  });

  it('off a terminal, every line of stderr is JSON, the reason said last included', async () => {
    const bad = files.write('bad-header.csv', 'id,mail\nE1,a@example.com\n');
    // Five commands at once: each is its own process, and none reads another's state.
    const runs: Array<[string, CliRun, number]> = await Promise.all(
      ([
        ['provision, refused', ['provision', bad], env(), 2],
        ['login-url, not found', ['login-url', 'nobody@nowhere.example', sim.state.courses[0]!.id], env(), 1],
        ['sync, a refused key', ['sync', 'courses'], cliEnv({ sim: { url: sim.url, apiKey: 'wrong' }, databaseUrl: database.url, prefix, redisUrl: REDIS_URL }), 2],
        ['an unknown option', ['status', '--no-such-option'], env(), 2],
        ['a bad variable', ['status'], env({ TRAINSYNC_REQUESTS_PER_SECOND: 'fast' }), 2],
      ] as const).map(async ([what, args, runEnv, code]): Promise<[string, CliRun, number]> => [what, await runCli([...args], runEnv), code]),
    );
    for (const [what, run, code] of runs) {
      expect(run.code, `${what}: ${run.stderr}`).toBe(code);
      const lines = records(run.stderr);
      expect(lines.length, what).toBeGreaterThan(0);
      // Before: the last line was plain text (`trainsync: …`) after the JSON records.
      expect(lines.at(-1)!.msg, what).toMatch(/\S/);
    }
  });

  it('Ctrl-C stops the worker with 130; on a terminal it shows each job started and ended, and that it stopped', async () => {
    const port = await freePort();
    const worker = startInTerminal(['worker', '--no-schedules'], env({ TRAINSYNC_METRICS_PORT: String(port) }), 100);
    const screen = (): string => renderScreen(worker.raw()).join('\n');
    await waitFor(async () => (/waiting for jobs/.test(screen()) ? true : undefined), 60_000, 'the worker to wait for jobs');
    // A sync while the worker is connected: the worker runs it.
    const sync = await runCli(['sync', 'courses'], env());
    expect(sync.code, sync.stderr).toBe(0);
    await waitFor(async () => (/finished +sync-courses/.test(screen()) ? true : undefined), 30_000, 'the job line');
    worker.ctrlC();
    const done = await worker.done;
    const shown = done.screen.join('\n');
    // Before: exit 0, and no line about any job.
    expect(done.code, shown).toBe(130);
    expect(shown).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC {2}started +sync-courses \(job \S+\)$/m);
    expect(shown).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC {2}finished +sync-courses \(job \S+\)$/m);
    expect(shown).toMatch(/UTC {2}stopping \(Ctrl-C\)/);
    expect(shown).toMatch(/UTC {2}stopped$/m);
    expect(shown).toMatch(/trainsync: interrupted \(Ctrl-C\)/);
  }, 120_000);

  it('Ctrl-C during a sync a worker runs: the last line says the worker goes on with it, not that it went back to the queue', async () => {
    const port = await freePort();
    const worker = startWorkerProcess(env({ TRAINSYNC_METRICS_PORT: String(port) }), ['--no-schedules']);
    workers.push(worker);
    await worker.ready;
    // Each request takes a while: the sync is surely running on the worker when it is interrupted.
    await fetch(`${sim.url}/__simulator/faults`, { method: 'POST', body: JSON.stringify({ latencyMs: 3_000 }) });
    try {
      const before = sim.requests.length;
      const run = startCli(['sync', 'users'], env());
      await waitFor(async () => (sim.requests.slice(before).some((r) => r.path === '/api/v2/users') ? true : undefined), 30_000, 'the worker to ask for users');
      run.kill('SIGINT');
      const done = await run.done;
      expect(done.code, done.stderr).toBe(130);
      const last = records(done.stderr).at(-1)!;
      // Before: "the jobs this process was running went back to the queue", though this process ran none.
      expect(last.msg).toMatch(/^trainsync: interrupted: stopped waiting; users still running on a worker, which finishes it$/);
      // And it does: the next status shows the run finished.
      await waitFor(
        async () => {
          const { rows } = await database.pool.query<{ status: string }>("select status from trainsync.runs where resource = 'users' order by started_at desc limit 1");
          return rows[0]?.status === 'succeeded' ? true : undefined;
        },
        60_000,
        'the worker to finish the users sync',
      );
    } finally {
      await fetch(`${sim.url}/__simulator/faults`, { method: 'POST', body: JSON.stringify({ latencyMs: 0 }) });
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  }, 120_000);

  it('status shows every time with its date and zone', async () => {
    const sync = await runCli(['sync', 'courses'], env());
    expect(sync.code, sync.stderr).toBe(0);
    const status = await runCli(['status'], env({ COLUMNS: '100' }));
    const row = status.stdout.split('\n').find((line) => /^│ courses /.test(line));
    // Before: `03:43`, no date and no zone.
    expect(row, status.stdout).toMatch(/│ \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC +│/);
  });
});
